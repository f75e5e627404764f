#!/usr/bin/env bash
# CI checks for Spool's Nix packaging (flake.nix, nix/). Called by .ci/run.
#
#   bash nix/ci-check.sh                 all checks, then the self-test
#   bash nix/ci-check.sh --no-self-test  all checks, no self-test
#   bash nix/ci-check.sh --only STAGE    one stage: parse | eval | module | vendor | checkphase | pyflakes
#   bash nix/ci-check.sh --self-test     only the self-test
#
# No Nix binary cache or GitHub is reachable here, so nothing is BUILT by Nix. Checked:
#   parse     every .nix file parses (nix-instantiate --parse);
#   eval      the flake's outputs (packages, image, checks incl. the test's driver
#             and its three NixOS machines, devShells, nixosModules) evaluate against
#             the stand-in nixpkgs in nix/stand-in, whose module system rejects
#             unknown options and wrong types; plus an example configuration that
#             sets every services.spool option (nix/ci/example.nix);
#   module    nix/module.nix evaluated by nixpkgs' REAL module system (lib.evalModules
#             of the lib vendored in nix/nixpkgs-lib) over the NixOS options it touches
#             (nix/ci/nixos-slice.nix: NixOS's names and types), in the minimal
#             configuration (nix/ci/minimal.nix), the every-option example and the three
#             test machines; each spool.service, rendered as NixOS renders units, must
#             pass `systemd-analyze verify` with no output, and its ExecStart, split as
#             systemd splits it (nix/ci/execstart-argv.py), must be accepted by the
#             `spool node` built from this commit (`spool node ARGS --help` exits 0);
#   vendor    vendorHash in nix/package.nix equals the hash of `go mod vendor` run
#             on the package's own source;
#   checkphase the package's tests, run as buildGoModule's checkPhase runs them: `go test`
#             of its subPackages (./cmd/spool) with checkPhase's flags, on that same vendored
#             source (GOFLAGS=-mod=vendor, GOPROXY=off), HOME=/homeless-shelter (which does
#             not exist), TMPDIR=/build, nothing else of the environment, as the system user
#             nixbld-spool (created if missing) without capabilities, in a network namespace
#             with only loopback; needs root (CI is). SPOOL_CI_GOCACHE_SEED=none starts its
#             GOCACHE empty instead of from a copy of root's (slower, same result);
#   pyflakes  the NixOS test's Python testScript passes pyflakes with the names the
#             current NixOS test driver defines (machines_qemu, machines_nspawn,
#             BaseMachine…; no longer `machines`);
#   self-test a stale vendorHash; a misspelt option, a wrongly typed one, a gossip key
#             given as a Nix path, SSL without a certificate and clashing ports (each
#             failing with the module system's or NixOS's own message); a unit systemd
#             rejects; an ExecStart flag `spool node` does not have; names the
#             testScript may not use; and package tests that dial a non-loopback address
#             and write under HOME: each makes this script fail.
# Not checked (needs network/KVM): that the package builds with Nix (checkphase runs its
# tests with this host's Go and filesystem, not the pinned nixpkgs' Go and the sandbox's),
# the image loads, the NixOS test passes, and the pinned nixpkgs' Go satisfies go.mod
# (nix/package.nix asserts it when evaluated against real nixpkgs).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

SYSTEMS=(x86_64-linux aarch64-linux)
NIX=(nix --extra-experimental-features 'nix-command flakes')
OVERRIDE=(--no-write-lock-file --override-input nixpkgs "path:$ROOT/nix/stand-in")

# Temporary directories, removed on exit (some hold the build user's files: root removes them).
TMPS=()
cleanup() { if [ ${#TMPS[@]} -gt 0 ]; then rm -rf "${TMPS[@]}"; fi; }
trap cleanup EXIT

fail() { echo "nix/ci-check: FAIL: $*" >&2; exit 1; }
step() { echo "== nix: $*"; }

mode=all stage=""
case "${1:-}" in
  "") ;;
  --no-self-test) mode=checks ;;
  --self-test) mode=self-test ;;
  --only) mode=only stage=${2:?--only needs a stage} ;;
  *) fail "unknown argument $1 (see the header of nix/ci-check.sh)" ;;
esac

# ---- tools ----
ensure_tools() {
  local missing=()
  command -v nix >/dev/null 2>&1 || missing+=(nix-bin)
  command -v pyflakes3 >/dev/null 2>&1 || missing+=(pyflakes3)
  command -v git >/dev/null 2>&1 || missing+=(git)
  command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
  command -v ip >/dev/null 2>&1 || missing+=(iproute2)
  if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || fail "missing ${missing[*]}: run \`sudo apt-get install -y ${missing[*]}\`"
    step "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  command -v go >/dev/null 2>&1 || fail "go is not on PATH; the vendorHash and ExecStart checks need Go >= the go.mod go line"
  git rev-parse --is-inside-work-tree >/dev/null 2>&1 \
    || fail "$ROOT is not a git work tree; flakes see only git-tracked files"
  local untracked
  untracked=$(git ls-files --others --exclude-standard -- flake.nix flake.lock nix)
  [ -z "$untracked" ] || fail "untracked Nix files (flakes ignore them): git add $(echo $untracked)"
}

nix_eval() { # nix_eval ATTR [extra args] -> prints the value; on error, nix's message
  local err rc=0
  err=$(mktemp)
  "${NIX[@]}" eval "${OVERRIDE[@]}" ".#$1" "${@:2}" 2>"$err" || rc=$?
  [ $rc = 0 ] || grep -v "^warning: \(Git tree\|not writing modified lock\)" "$err" >&2
  rm -f "$err"
  return $rc
}

# ---- stages ----
check_parse() {
  step "parse every .nix file"
  local f n=0
  while IFS= read -r -d '' f; do
    nix-instantiate --parse "$f" >/dev/null || fail "$f does not parse (see above)"
    n=$((n + 1))
  done < <(find . -name '*.nix' -not -path './.git/*' -not -path '*/node_modules/*' -print0)
  [ "$n" -gt 0 ] || fail "no .nix files found"
  echo "   $n files parse"
}

check_eval() {
  step "flake.nix pins nixpkgs by revision"
  grep -Eq '^ *inputs\.nixpkgs\.url = "github:NixOS/nixpkgs/[0-9a-f]{40}";' flake.nix \
    || fail "flake.nix must pin nixpkgs by revision: inputs.nixpkgs.url = \"github:NixOS/nixpkgs/<40-hex revision>\"; (no flake.lock can be written here; see the comment there)"
  echo "   $(grep -Eo 'github:NixOS/nixpkgs/[0-9a-f]{40}' flake.nix)"
  step "evaluate the flake against the stand-in nixpkgs (nix/stand-in)"
  local log
  log=$(mktemp)
  if ! "${NIX[@]}" flake check --no-build "${OVERRIDE[@]}" >"$log" 2>&1; then
    grep -v "^warning: \(Git tree\|not writing modified lock\)" "$log" >&2; rm -f "$log"
    fail "the flake does not evaluate (message above); fix flake.nix or nix/*.nix"
  fi
  rm -f "$log"
  local sys attr
  for sys in "${SYSTEMS[@]}"; do
    for attr in packages.$sys.default packages.$sys.image checks.$sys.cluster \
                checks.$sys.cluster.driver devShells.$sys.default; do
      nix_eval "$attr.drvPath" --raw >/dev/null || fail "$attr does not evaluate (message above)"
    done
    echo "   $sys: package, image, cluster test + driver (3 NixOS machines), devShell evaluate"
  done
  [ "$(nix_eval packages.x86_64-linux.default.meta.mainProgram --raw)" = spool ] \
    || fail "packages.default.meta.mainProgram must be \"spool\""
  local ep
  ep=$(nix_eval packages.x86_64-linux.image.imageName --raw) || fail "image has no imageName"
  [ "$ep" = spool ] || fail "image name is $ep, expected spool"

  # What the issue asks of the image and the unit, read back from the evaluation.
  local drv
  drv=$(nix_eval packages.x86_64-linux.image.drvPath --raw) || fail "image does not evaluate"
  "${NIX[@]}" show-derivation "$drv" 2>/dev/null | python3 -c '
import json, sys
env = next(iter(json.load(sys.stdin).values()))["env"]
cfg = json.loads(env["config"])  # the stand-in keeps the OCI config as JSON
problems = []
if cfg.get("User", "root").split(":")[0] in ("", "0", "root"):
    problems.append("image must run as a non-root User")
if cfg.get("Entrypoint", [])[-1:] != ["node"]:
    problems.append("image Entrypoint must be `spool node`")
for port in ("9092/tcp", "7946/tcp", "7946/udp", "9644/tcp"):
    if port not in cfg.get("ExposedPorts", {}):
        problems.append("image must expose " + port)
if "/var/lib/spool" not in cfg.get("Volumes", {}):
    problems.append("image must declare the /var/lib/spool volume")
for p in problems:
    print("   " + p, file=sys.stderr)
sys.exit(1 if problems else 0)
' || fail "the OCI image config is missing something the issue requires (above); see nix/image.nix"
  local unit
  unit=$(nix_eval checks.x86_64-linux.cluster.nodes.spool1.systemd.services.spool.serviceConfig --json) \
    || fail "cannot read the test machines' spool unit"
  echo "$unit" | python3 -c '
import json, sys
sc = json.load(sys.stdin)
want = {"DynamicUser": True, "NoNewPrivileges": True, "ProtectSystem": "strict",
        "Restart": "on-failure", "RestartPreventExitStatus": 78, "KillSignal": "SIGTERM"}
problems = [f"{k}={v!r} (have {sc.get(k)!r})" for k, v in want.items() if sc.get(k) != v]
if "--gossip-key-file=%d/" not in sc.get("ExecStart", "") or not any(
        c.startswith("gossip-key:/run/") for c in sc.get("LoadCredential", [])):
    problems.append("gossip key must come from LoadCredential= of a file outside the store")
for p in problems:
    print("   unit needs " + p, file=sys.stderr)
sys.exit(1 if problems else 0)
' || fail "the spool systemd unit lacks required hardening (above); see nix/module.nix"
  echo "   image: non-root, entrypoint spool node, ports and volume; unit: hardened, key via LoadCredential"

  # The module in a configuration that sets every option (not only the test's).
  local out
  if ! out=$(nix-instantiate --eval --strict --read-write-mode nix/ci/eval-example.nix 2>&1); then
    echo "$out" >&2
    fail "nix/ci/example.nix (services.spool with every option set) does not evaluate (message above)"
  fi
  echo "   services.spool example configuration evaluates: $out"
}

# The `spool` built from this commit, laid out as the package installs it: DIR/bin/spool.
# Built once; the self-test's broken copies change only Nix files and reuse it
# (SPOOL_CI_PACKAGE, exported).
spool_package() {
  if [ -z "${SPOOL_CI_PACKAGE:-}" ]; then
    local dir
    dir=$(mktemp -d)
    TMPS+=("$dir")
    SPOOL_CI_PACKAGE=$dir/spool
    mkdir -p "$SPOOL_CI_PACKAGE/bin"
    step "go build -o \$tmp/spool/bin/spool ./cmd/spool (for the ExecStart check)"
    go build -o "$SPOOL_CI_PACKAGE/bin/spool" ./cmd/spool || fail "go build ./cmd/spool failed (above)"
    export SPOOL_CI_PACKAGE
  fi
  [ -x "$SPOOL_CI_PACKAGE/bin/spool" ] || fail "$SPOOL_CI_PACKAGE/bin/spool is not an executable"
}

check_module() {
  spool_package
  step "evaluate nix/module.nix with nixpkgs' real module system (nix/nixpkgs-lib, nix/ci/module-eval.nix)"
  local work out names name unit n=0
  local -a argv
  work=$(mktemp -d)
  if ! nix-instantiate --eval --strict --json nix/ci/module-eval.nix \
      --argstr spool "$SPOOL_CI_PACKAGE" >"$work/eval.json" 2>"$work/err"; then
    cat "$work/err" >&2; rm -rf "$work"
    fail "nix/module.nix does not evaluate with nixpkgs' lib.evalModules (message above)"
  fi
  # Warnings (the module's, or a systemd Type=/Restart= value NixOS refuses) go to stderr.
  if [ -s "$work/err" ]; then
    cat "$work/err" >&2; rm -rf "$work"
    fail "evaluating nix/module.nix printed warnings (above)"
  fi
  names=$(python3 -c '
import json, os, sys
for name, c in sorted(json.load(open(sys.argv[1])).items()):
    os.makedirs(os.path.join(sys.argv[2], name))
    with open(os.path.join(sys.argv[2], name, "spool.service"), "w") as f:
        f.write(c["unit"])
    print(name)
' "$work/eval.json" "$work/units") || { rm -rf "$work"; fail "cannot read the evaluated units"; }
  [ -n "$names" ] || { rm -rf "$work"; fail "nix/ci/module-eval.nix gave no configurations"; }
  echo "   evaluate: $(echo $names)"

  step "systemd-analyze verify each rendered spool.service (must print nothing)"
  for name in $names; do
    unit="$work/units/$name/spool.service"
    out=$(systemd-analyze verify "$unit" 2>&1) || true
    if [ -n "$out" ]; then
      echo "$out" >&2; echo "--- $name: spool.service as rendered:" >&2; cat -n "$unit" >&2; rm -rf "$work"
      fail "systemd-analyze verify rejects $name's spool.service (above); see nix/module.nix"
    fi
  done
  echo "   $(echo $names | wc -w) units verified, no output"

  step "each ExecStart, split as systemd splits it, passes \`spool node ARGS --help\`"
  for name in $names; do
    unit="$work/units/$name/spool.service"
    python3 nix/ci/execstart-argv.py "$unit" >"$work/argv" \
      || { rm -rf "$work"; fail "$name: systemd would not accept the ExecStart of spool.service (above)"; }
    mapfile -d '' argv <"$work/argv"
    if [ "${argv[0]:-}" != "$SPOOL_CI_PACKAGE/bin/spool" ] || [ "${argv[1]:-}" != node ]; then
      rm -rf "$work"; fail "$name: ExecStart must run $SPOOL_CI_PACKAGE/bin/spool node, not: ${argv[*]:0:2}"
    fi
    if ! out=$(python3 nix/ci/check-node-args.py "${argv[@]:0:1}" "${argv[@]:2}" 2>&1); then
      echo "$out" >&2; rm -rf "$work"
      fail "$name: \`spool node\` rejects the ExecStart of spool.service: $(echo "$out" | tail -n 1)"
    fi
    n=$((n + 1))
  done
  echo "   $n ExecStart lines (the last with $((${#argv[@]} - 2)) arguments) accepted by the spool node of this commit"
  rm -rf "$work"
}

# The package's source as buildGoModule builds and tests it: the store path nix/package.nix
# builds from (its `src`), copied out, with `go mod vendor`'s vendor/ in it
# (nix/vendor-hash.sh --keep). Made once per run, for the vendor and checkphase stages:
# $VENDORED/source, and $VENDOR_HASH the vendorHash it gives.
VENDORED="" VENDOR_HASH=""
vendored_source() {
  [ -z "$VENDORED" ] || return 0
  VENDORED=$(mktemp -d)
  TMPS+=("$VENDORED")
  VENDOR_HASH=$(bash nix/vendor-hash.sh --keep "$VENDORED/source") \
    || fail "could not vendor the package's source (message above)"
}

check_vendor() {
  step "vendorHash matches \`go mod vendor\` of the package source"
  local pattern='^ *vendorHash = (null|"sha256-[A-Za-z0-9+/]{43}=");$' want got
  [ "$(grep -Ec "$pattern" nix/package.nix)" = 1 ] \
    || fail "nix/package.nix must have exactly one line \`vendorHash = \"sha256-…\";\` (or null)"
  want=$(sed -En "s/$pattern/\\1/p" nix/package.nix | tr -d '"')
  vendored_source
  got=$VENDOR_HASH
  if [ "$want" != "$got" ]; then
    if [ "$got" = null ]; then got_nix=null; else got_nix="\"$got\""; fi
    fail "vendorHash is stale: set it to $got_nix in nix/package.nix (or run \`bash nix/update-vendor-hash.sh\`); it is $want"
  fi
  echo "   vendorHash $want is current"
}

# ---- checkphase: the package's tests, run as buildGoModule's checkPhase runs them ----
# In a Nix build the tests run in the sandbox: vendored modules only (GOFLAGS=-mod=vendor,
# GOPROXY=off), no network but loopback, HOME=/homeless-shelter (which does not exist), an
# unprivileged build user, TMPDIR its own build directory, an empty environment otherwise.
# This stage does the same with a network namespace and a system user, so a test that needs
# the network or a home directory fails here and not on an operator's build machine.
CHECK_USER=nixbld-spool
NIX_HOME=/homeless-shelter

check_user() { # the unprivileged build user (a system user, created if missing)
  if ! id -u "$CHECK_USER" >/dev/null 2>&1; then
    useradd --system --no-create-home --home-dir "$NIX_HOME" --shell /usr/sbin/nologin \
      --comment "Spool CI build user (nix/ci-check.sh checkphase)" "$CHECK_USER" \
      || id -u "$CHECK_USER" >/dev/null 2>&1 || fail "cannot create the system user $CHECK_USER (useradd)"
  fi
}

check_checkphase() {
  step "the package's tests as buildGoModule's checkPhase runs them (vendored, GOPROXY=off, loopback only, HOME=$NIX_HOME, user $CHECK_USER)"
  [ "$(id -u)" = 0 ] \
    || fail "the checkphase stage needs root (a network namespace and a build user): sudo bash nix/ci-check.sh --only checkphase"
  [ ! -e "$NIX_HOME" ] || fail "$NIX_HOME exists; remove it (in a Nix build HOME=$NIX_HOME does not exist)"
  local attrs
  attrs=$(nix_eval packages.x86_64-linux.default --json \
    --apply 'p: { inherit (p) doCheck subPackages ldflags tags checkFlags preCheck env; }') \
    || fail "cannot read the package's check attributes (message above)"
  local work build start uid gid log pkg n=0
  local -a flags pkgs envv
  work=$(mktemp -d)
  TMPS+=("$work")
  # buildGoModule's buildGoDir for `test`: -tags, -ldflags (with its -buildid=), -p
  # $NIX_BUILD_CORES, -vet=off, then checkFlags; one `go test` per subPackage.
  python3 -c '
import json, sys
a = json.loads(sys.argv[1])
out = open(sys.argv[2], "w")
def die(msg):
    print("nix/ci-check: FAIL: nix/package.nix: " + msg, file=sys.stderr); sys.exit(1)
if a["preCheck"]:
    die("preCheck is set, which the checkphase stage does not run; teach it to")
if not a["doCheck"]:
    sys.exit(0)
if not a["subPackages"]:
    die("no subPackages: buildGoModule would test every package (the integration tests too); the checkphase stage runs only subPackages")
ld = a["ldflags"] + ([] if any(f.startswith("-buildid=") for f in a["ldflags"]) else ["-buildid="])
flags = ([("-tags=" + ",".join(a["tags"]))] if a["tags"] else []) + ["-ldflags=" + " ".join(ld)]
env = json.loads(a["env"])
print("CGO_ENABLED=%s" % env.get("CGO_ENABLED", 1), file=out)
print("FLAGS=" + "\0".join(flags), file=out)
print("CHECKFLAGS=" + "\0".join(a["checkFlags"]), file=out)
for p in a["subPackages"]:
    print("PKG=./" + p, file=out)
' "$attrs" "$work/attrs" || exit 1
  if [ ! -s "$work/attrs" ]; then echo "   doCheck = false: buildGoModule runs no tests"; return 0; fi
  local cgo
  cgo=$(sed -n 's/^CGO_ENABLED=//p' "$work/attrs")
  mapfile -d '' -t flags < <(sed -n 's/^FLAGS=//p' "$work/attrs" | tr -d '\n')
  flags+=(-p "$(nproc)" -vet=off)
  local -a checkflags
  mapfile -d '' -t checkflags < <(sed -n 's/^CHECKFLAGS=//p' "$work/attrs" | tr -d '\n')
  flags+=("${checkflags[@]}")
  if [ -n "${SPOOL_CI_CHECKPHASE_RUN:-}" ]; then flags+=(-run "$SPOOL_CI_CHECKPHASE_RUN"); fi  # the self-test's
  mapfile -t pkgs < <(sed -n 's/^PKG=//p' "$work/attrs")

  check_user
  uid=$(id -u "$CHECK_USER") gid=$(id -g "$CHECK_USER")
  vendored_source
  # The build directory, $TMPDIR: at /build as in the sandbox (bind-mounted there in a private
  # mount namespace, so runs side by side do not meet), holding the unpacked, writable source.
  build=$work/build
  mkdir -p "$build"
  cp -a "$VENDORED/source" "$build/source"
  [ -d /build ] || mkdir -m 755 /build || fail "cannot create /build, the mount point of the build directory"
  chown -R "$uid:$gid" "$build"
  # GOCACHE (/build/go-cache, as configurePhase sets it) is fresh and the user's, but seeded
  # with a copy of a Go cache: root's (only the standard library's compiled packages hit,
  # saving about 30s of 2 cores), or in the self-test this run's checkphase one (same paths,
  # so only what the broken copy changed is compiled). Its test results are expired, so every
  # test runs. SPOOL_CI_GOCACHE_SEED=none starts it empty, as a Nix build does.
  # The copy is of hard links (root's cache is gigabytes), in directories the user owns: it
  # can add and remove entries, read root's, and write none of them (Go never rewrites an
  # intact entry). The files at its top (trim.txt, testexpire.txt…) are real copies.
  local seed=${SPOOL_CI_CHECKPHASE_GOCACHE:-$(go env GOCACHE)} f
  if [ "${SPOOL_CI_GOCACHE_SEED:-}" != none ] && [ -d "$seed" ]; then
    cp -al "$seed" "$build/go-cache"
    for f in "$build/go-cache"/*; do
      if [ -f "$f" ]; then cp --remove-destination "$seed/${f##*/}" "$f"; fi
    done
    (cd / && GOCACHE="$build/go-cache" GOFLAGS='' go clean -testcache) \
      || fail "go clean -testcache on the seeded GOCACHE failed"
    find "$build/go-cache" -maxdepth 1 -type f -exec chown "$uid:$gid" {} +
    find "$build/go-cache" -type d -exec chown "$uid:$gid" {} +
  fi
  chmod 755 "$work"
  # nixpkgs' configurePhase and checkPhase: GOFLAGS=-mod=vendor (-trimpath removed for tests);
  # nothing else of root's environment (env -i).
  envv=(PATH="$(dirname "$(command -v go)"):/usr/bin:/bin" HOME="$NIX_HOME"
        TMPDIR=/build TMP=/build TEMP=/build TEMPDIR=/build NIX_BUILD_TOP=/build
        NIX_BUILD_CORES="$(nproc)" GOCACHE=/build/go-cache GOPATH=/build/go
        GOPROXY=off GOSUMDB=off GO111MODULE=on GOTOOLCHAIN=local GOFLAGS="-mod=vendor "
        CGO_ENABLED="$cgo")
  log=$work/test.log
  start=$SECONDS
  for pkg in "${pkgs[@]}"; do
    # As root in new network and mount namespaces: bring up lo (the only interface), mount the
    # build directory; then, as the build user without capabilities, buildGoDir's `go test`.
    # shellcheck disable=SC2016 # the inner bash expands $1 and $@
    if ! unshare --net --mount --propagation private -- bash -c \
        'mount --bind "$1" /build && ip link set lo up && cd /build/source && shift && exec "$@"' checkphase "$build" \
        setpriv --reuid="$uid" --regid="$gid" --init-groups --inh-caps=-all --bounding-set=-all --no-new-privs -- \
        env -i "${envv[@]}" go test "${flags[@]}" "$pkg" >"$log" 2>&1; then
      cat "$log" >&2
      fail "$pkg: its tests fail as buildGoModule's checkPhase runs them (vendored modules, GOPROXY=off, no network but loopback, HOME=$NIX_HOME, user $CHECK_USER; output above): a Nix build of the package would fail"
    fi
    if grep -q '(cached)' "$log"; then
      cat "$log" >&2; fail "$pkg: go test reused a cached result; the seeded GOCACHE must not decide the tests"
    fi
    sed 's/^/   /' "$log"
    n=$((n + 1))
  done
  export SPOOL_CI_CHECKPHASE_GOCACHE=$build/go-cache  # for the self-test's copies
  echo "   $n package(s) tested as user $CHECK_USER, HOME=$NIX_HOME, loopback only, in $((SECONDS - start))s: go test ${flags[*]}"
}

check_pyflakes() {
  step "pyflakes on the NixOS test's testScript"
  local work script nodes builtins
  work=$(mktemp -d)
  script="$work/spool_cluster_test.py"
  nix_eval checks.x86_64-linux.cluster.config.testScript --raw >"$script" \
    || { rm -rf "$work"; fail "cannot extract the testScript (message above)"; }
  # eval prints the value without a trailing newline
  echo >>"$script"
  nodes=$(nix_eval checks.x86_64-linux.cluster.config.nodes --apply 'n: builtins.concatStringsSep "," (builtins.attrNames n)' --raw) \
    || { rm -rf "$work"; fail "cannot list the test's nodes"; }
  # The globals the current NixOS test driver gives a test script (nixpkgs
  # nixos/lib/test-driver/src/test_driver/driver.py, Driver.test_symbols, since the
  # systemd-nspawn backend: `machines`, `Machine` and `dump_machine_ssh` are gone), plus
  # one variable per machine and one per VLAN (the test machines are all on vlan 1).
  builtins="$nodes,vlan1,start_all,test_script,machines_qemu,machines_nspawn,vlans,driver,log,os,create_machine,subtest,run_tests,join_all,retry,serial_stdout_off,serial_stdout_on,polling_condition,BaseMachine,t,debug"
  if ! PYFLAKES_BUILTINS="$builtins" pyflakes3 "$script"; then
    echo "--- testScript as extracted:" >&2; cat -n "$script" >&2; rm -rf "$work"
    fail "pyflakes found problems in the testScript of nix/test.nix (above)"
  fi
  echo "   testScript ($(wc -l <"$script") lines, machines $nodes) is clean"
  pyflakes3 nix/ci/*.py || fail "pyflakes found problems in nix/ci/*.py (above)"
  echo "   nix/ci/*.py are clean"
  rm -rf "$work"
}

# ---- self-test: break things in a copy and expect this script to fail ----
self_test() {
  step "self-test: deliberately broken copies must fail"
  local self_start=$SECONDS
  spool_package  # built once, for every copy's module stage
  local base
  base=$(mktemp -d)
  # Tracked files only, as the flake sees them (working-copy contents).
  git ls-files -z | grep -zv '^integration/js/node_modules/' | tar --null -T - -cf - | tar -xf - -C "$base"
  (cd "$base" && git init -q && git add -A && git -c user.name=ci -c user.email=ci@localhost commit -qm base)

  local passed=0
  # EDIT is a sed -E expression applied to FILE or, when there is no FILE, the contents of a
  # new FILE (git-added: flakes see only tracked files).
  expect_failure() { # NAME STAGE FILE EDIT EXPECTED-MESSAGE-REGEX...
    local name=$1 stage=$2 file=$3 expr=$4 dir out re start=$SECONDS
    shift 4
    dir=$(mktemp -d)
    cp -a "$base/." "$dir/"
    if [ -e "$base/$file" ]; then
      sed -Ei "$expr" "$dir/$file"
      if cmp -s "$base/$file" "$dir/$file"; then rm -rf "$dir"; fail "self-test '$name': the edit '$expr' changed nothing in $file"; fi
    else
      printf '%s\n' "$expr" >"$dir/$file"
      git -C "$dir" add "$file"
    fi
    if out=$(bash "$dir/nix/ci-check.sh" --only "$stage" 2>&1); then
      echo "$out" >&2; rm -rf "$dir"
      fail "self-test '$name': ci-check passed on a broken tree"
    fi
    for re in "$@"; do  # every expected message must be there
      if ! echo "$out" | grep -Eq -- "$re"; then
        echo "$out" >&2; rm -rf "$dir"
        fail "self-test '$name': ci-check failed, but without a message matching /$re/"
      fi
    done
    echo "   ok ($((SECONDS - start))s): $name -> $(echo "$out" | grep -Eo -- "${!#}" | head -n 1)"
    passed=$((passed + 1))
    rm -rf "$dir"
  }

  expect_failure "stale vendorHash" vendor nix/package.nix \
    's#^( *vendorHash = ).*#\1"sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=";#' \
    'vendorHash is stale: set it to [^ ]+ in nix/package.nix'
  expect_failure "misspelt module option (nodeId -> nodeID)" eval nix/test.nix \
    's#nodeId = id;#nodeID = id;#' \
    "The option .services\.spool\.nodeID' does not exist"
  expect_failure "wrongly typed option (openFirewall = \"yes\")" eval nix/test.nix \
    's#openFirewall = true;#openFirewall = "yes";#' \
    "option .services\.spool\.openFirewall' is not of type .boolean'"
  expect_failure "gossip key given as a Nix path (would be copied to the store)" eval nix/ci/example.nix \
    's#gossipKeyFile = "[^"]*";#gossipKeyFile = ./example.nix;#' \
    "option .services\.spool\.gossipKeyFile' is not of type"
  # nixpkgs' real module system (stage module), failing with its own messages.
  expect_failure "real module system: misspelt option (nodeId -> nodeID)" module nix/test.nix \
    's#nodeId = id;#nodeID = id;#' \
    "error: The option .services\.spool\.nodeID' does not exist\. Definition values:"
  expect_failure "real module system: gossip key given as a Nix path" module nix/ci/example.nix \
    's#gossipKeyFile = "[^"]*";#gossipKeyFile = ./example.nix;#' \
    "A definition for option .services\.spool\.gossipKeyFile' is not of type .null or absolute path outside the Nix store"
  expect_failure "real module system: SSL without a certificate" module nix/ci/minimal.nix \
    's#nodeId = 1;#nodeId = 1;\n    kafkaSecurityProtocol = "SSL";#' \
    "Failed assertions:" \
    "- services\.spool: kafkaSecurityProtocol SSL needs tls\.certFile and tls\.keyFile\."
  expect_failure "real module system: clashing ports (raftPort = adminPort)" module nix/ci/example.nix \
    's#raftPort = 19645;#raftPort = 19644;#' \
    "Failed assertions:" \
    "- services\.spool: kafkaPort, gossipPort, adminPort and raftPort must differ\."
  # The rendered unit, checked by systemd.
  expect_failure "unit: misspelt systemd directive (ProtectSystem -> ProtectSytem)" module nix/module.nix \
    's#^( *)ProtectSystem = "strict";#\1ProtectSytem = "strict";#' \
    "systemd-analyze verify rejects" \
    "Unknown key 'ProtectSytem' in section \[Service\]"
  expect_failure "unit: a signal systemd does not know (KillSignal = SIGTERMX)" module nix/module.nix \
    's#KillSignal = "SIGTERM";#KillSignal = "SIGTERMX";#' \
    "systemd-analyze verify rejects" \
    "Failed to parse signal name.*SIGTERMX"
  # The ExecStart, checked by the `spool node` of this commit.
  expect_failure "ExecStart: a flag spool node does not have (--log-fmt)" module nix/module.nix \
    's#"--log-format=\$\{cfg\.logFormat\}"#"--log-fmt=${cfg.logFormat}"#' \
    "rejects the ExecStart of spool.service" \
    "unknown flag: --log-fmt"
  expect_failure "ExecStart: a positional argument (the join peers without --join=)" module nix/module.nix \
    's#\+\+ map \(peer: "--join=\$\{peer\}"\) cfg\.join#++ cfg.join#' \
    "rejects the ExecStart of spool.service" \
    "'spool-1\.internal:17946' is a positional argument"
  expect_failure "testScript uses \`machines\`, no longer a test driver global" pyflakes nix/test.nix \
    's#^( *)servers = \[spool1, spool2, spool3\]#\1servers = sorted(machines, key=lambda m: m.name)#' \
    "undefined name 'machines'"
  expect_failure "nixpkgs followed by branch, not pinned by revision" eval flake.nix \
    's#github:NixOS/nixpkgs/[0-9a-f]{40}#github:NixOS/nixpkgs/nixos-26.05#' \
    "flake.nix must pin nixpkgs by revision"
  expect_failure "package built with nixpkgs' default Go (1.25 in the stand-in) instead of go_1_26" eval flake.nix \
    's#goFor = pkgs: \{ go = pkgs\.go_1_26; buildGoModule = pkgs\.buildGo126Module; \};#goFor = pkgs: { inherit (pkgs) go buildGoModule; };#' \
    "go\.mod says .go 1\.26\.0. but the Go given to the build is 1\.25\.9"
  expect_failure "undefined name in the testScript" pyflakes nix/test.nix \
    's#^( *)start_all\(\)#\1start_all()\n\1spool4.succeed("true")#' \
    "undefined name 'spool4'"

  # The package's tests, in the Nix build's conditions: tests that dial a non-loopback
  # address (this host's own: outside the sandbox that is "connection refused", never
  # "network is unreachable") and that write under HOME. Only they run (-run), in one copy.
  local addr
  addr=$(ip -4 -o addr show scope global | awk '{ sub("/.*", "", $4); print $4; exit }')
  SPOOL_CI_CHECKPHASE_RUN='^TestCIBroken' expect_failure \
    "checkPhase: tests that need the network and a home directory" checkphase cmd/spool/ci_broken_test.go \
    "package main

import (
	\"net\"
	\"os\"
	\"path/filepath\"
	\"testing\"
	\"time\"
)

// Added by nix/ci-check.sh's self-test: a Nix build has neither.
func TestCIBrokenDialsOut(t *testing.T) {
	c, err := net.DialTimeout(\"tcp\", \"${addr:-1.1.1.1}:9\", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestCIBrokenWritesHome(t *testing.T) {
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, \".config\", \"spool\"), 0o700); err != nil {
		t.Fatal(err)
	}
}" \
    "\./cmd/spool: its tests fail as buildGoModule's checkPhase runs them" \
    "--- FAIL: TestCIBrokenWritesHome" \
    "mkdir /homeless-shelter: permission denied" \
    "--- FAIL: TestCIBrokenDialsOut" \
    "dial tcp [0-9.]+:9: connect: network is unreachable"

  rm -rf "$base"
  echo "   self-test: $passed broken trees failed as they should, in $((SECONDS - self_start))s"
}

ensure_tools
case $mode in
  only)
    case $stage in
      parse) check_parse ;; eval) check_eval ;; module) check_module ;; vendor) check_vendor ;;
      checkphase) check_checkphase ;; pyflakes) check_pyflakes ;;
      *) fail "unknown stage $stage (parse | eval | module | vendor | checkphase | pyflakes)" ;;
    esac ;;
  self-test) self_test ;;
  checks|all)
    check_parse
    check_eval
    check_module
    check_vendor
    check_checkphase
    check_pyflakes
    [ "$mode" = checks ] || self_test
    echo "nix/ci-check: all Nix checks passed" ;;
esac
