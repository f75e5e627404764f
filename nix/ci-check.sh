#!/usr/bin/env bash
# CI checks for Spool's Nix packaging (flake.nix, nix/). Called by .ci/run.
#
#   bash nix/ci-check.sh                 all checks, then the self-test
#   bash nix/ci-check.sh --no-self-test  all checks, no self-test
#   bash nix/ci-check.sh --only STAGE    one stage: parse | eval | vendor | pyflakes
#   bash nix/ci-check.sh --self-test     only the self-test
#
# No Nix binary cache or GitHub is reachable here, so nothing is BUILT. Checked:
#   parse     every .nix file parses (nix-instantiate --parse);
#   eval      the flake's outputs (packages, image, checks incl. the test's driver
#             and its three NixOS machines, devShells, nixosModules) evaluate against
#             the stand-in nixpkgs in nix/stand-in, whose module system rejects
#             unknown options and wrong types; plus an example configuration that
#             sets every services.spool option (nix/ci/example.nix);
#   vendor    vendorHash in nix/package.nix equals the hash of `go mod vendor` run
#             on the package's own source;
#   pyflakes  the NixOS test's Python testScript passes pyflakes with the names the
#             NixOS test driver defines;
#   self-test a stale vendorHash, a misspelt services.spool option, a wrongly typed
#             option and a gossip key given as a Nix path each make this script fail.
# Not checked (needs network/KVM): that the package builds, the image loads, the NixOS
# test passes, and the pinned nixpkgs' Go satisfies go.mod (nix/package.nix asserts it
# when evaluated against real nixpkgs).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

SYSTEMS=(x86_64-linux aarch64-linux)
NIX=(nix --extra-experimental-features 'nix-command flakes')
OVERRIDE=(--no-write-lock-file --override-input nixpkgs "path:$ROOT/nix/stand-in")

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
  if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || fail "missing ${missing[*]}: run \`sudo apt-get install -y ${missing[*]}\`"
    step "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  command -v go >/dev/null 2>&1 || fail "go is not on PATH; the vendorHash check needs Go >= the go.mod go line"
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
        "Restart": "on-failure", "KillSignal": "SIGTERM"}
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

check_vendor() {
  step "vendorHash matches \`go mod vendor\` of the package source"
  local pattern='^ *vendorHash = (null|"sha256-[A-Za-z0-9+/]{43}=");$' want got
  [ "$(grep -Ec "$pattern" nix/package.nix)" = 1 ] \
    || fail "nix/package.nix must have exactly one line \`vendorHash = \"sha256-…\";\` (or null)"
  want=$(sed -En "s/$pattern/\\1/p" nix/package.nix | tr -d '"')
  got=$(bash nix/vendor-hash.sh) || fail "could not compute the vendor hash (message above)"
  if [ "$want" != "$got" ]; then
    if [ "$got" = null ]; then got_nix=null; else got_nix="\"$got\""; fi
    fail "vendorHash is stale: set it to $got_nix in nix/package.nix (or run \`bash nix/update-vendor-hash.sh\`); it is $want"
  fi
  echo "   vendorHash $want is current"
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
  # The globals nixpkgs' test driver gives a test script (test_driver/driver.py
  # test_symbols), plus one variable per machine.
  builtins="$nodes,start_all,subtest,test_script,dump_machine_ssh,machines,vlans,driver,log,create_machine,run_tests,join_all,retry,serial_stdout_off,serial_stdout_on,polling_condition,Machine,t"
  if ! PYFLAKES_BUILTINS="$builtins" pyflakes3 "$script"; then
    echo "--- testScript as extracted:" >&2; cat -n "$script" >&2; rm -rf "$work"
    fail "pyflakes found problems in the testScript of nix/test.nix (above)"
  fi
  echo "   testScript ($(wc -l <"$script") lines, machines $nodes) is clean"
  rm -rf "$work"
}

# ---- self-test: break things in a copy and expect this script to fail ----
self_test() {
  step "self-test: deliberately broken copies must fail"
  local base
  base=$(mktemp -d)
  # Tracked files only, as the flake sees them (working-copy contents).
  git ls-files -z | grep -zv '^integration/js/node_modules/' | tar --null -T - -cf - | tar -xf - -C "$base"
  (cd "$base" && git init -q && git add -A && git -c user.name=ci -c user.email=ci@localhost commit -qm base)

  local passed=0
  expect_failure() { # NAME STAGE FILE SED-EXPRESSION EXPECTED-MESSAGE-REGEX
    local name=$1 stage=$2 file=$3 expr=$4 expect=$5 dir out
    dir=$(mktemp -d)
    cp -a "$base/." "$dir/"
    sed -Ei "$expr" "$dir/$file"
    if cmp -s "$base/$file" "$dir/$file"; then rm -rf "$dir"; fail "self-test '$name': the edit '$expr' changed nothing in $file"; fi
    if out=$(bash "$dir/nix/ci-check.sh" --only "$stage" 2>&1); then
      echo "$out" >&2; rm -rf "$dir"
      fail "self-test '$name': ci-check passed on a broken tree"
    fi
    if ! echo "$out" | grep -Eq "$expect"; then
      echo "$out" >&2; rm -rf "$dir"
      fail "self-test '$name': ci-check failed, but without a message matching /$expect/"
    fi
    echo "   ok: $name -> $(echo "$out" | grep -Eo "$expect" | head -n 1)"
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
  expect_failure "undefined name in the testScript" pyflakes nix/test.nix \
    's#^( *)start_all\(\)#\1start_all()\n\1spool4.succeed("true")#' \
    "undefined name 'spool4'"

  rm -rf "$base"
  echo "   self-test: $passed broken trees failed as they should"
}

ensure_tools
case $mode in
  only)
    case $stage in
      parse) check_parse ;; eval) check_eval ;; vendor) check_vendor ;; pyflakes) check_pyflakes ;;
      *) fail "unknown stage $stage (parse | eval | vendor | pyflakes)" ;;
    esac ;;
  self-test) self_test ;;
  checks|all)
    check_parse
    check_eval
    check_vendor
    check_pyflakes
    [ "$mode" = checks ] || self_test
    echo "nix/ci-check: all Nix checks passed" ;;
esac
