# The `spool` binary. vendorHash is checked (and rewritten by
# nix/update-vendor-hash.sh) by nix/ci-check.sh: after any go.mod/go.sum or import
# change, run `bash nix/update-vendor-hash.sh`.
{ lib, buildGoModule, go, version ? "dev" }:
let
  root = ../.;

  # The `go` line of go.mod: the pinned nixpkgs' Go must be at least this.
  goModGo =
    let m = builtins.match "(.*\n)?go ([0-9.]+)[[:space:]]*(\n.*)?" (builtins.readFile ../go.mod);
    in if m == null then throw "nix/package.nix: go.mod has no `go` line" else builtins.elemAt m 1;

  # The Go sources only: editing Nix files, CI scripts or docs does not rebuild.
  # nix/ci-check.sh vendors from this very store path, so keep anything Go needs here.
  src = lib.cleanSourceWith {
    name = "spool-source";
    src = root;
    filter = path: type:
      let
        rel = lib.removePrefix (toString root + "/") (toString path);
        base = baseNameOf (toString path);
      in
      !(builtins.elem rel [ "nix" "flake.nix" "flake.lock" ".ci" ".git" "vendor" ]
        || base == "node_modules"
        || lib.hasPrefix "result" rel
        || (type == "regular" && lib.hasSuffix ".md" base));
  };
in
# `go` is the Go that `buildGoModule` builds with: flake.nix passes the pair from the pinned
# nixpkgs, nixos-26.05's go_1_26 (Go 1.26.x) and buildGo126Module.
assert lib.versionAtLeast go.version goModGo
  || throw "nix/package.nix: go.mod says `go ${goModGo}` but the Go given to the build is ${go.version}; flake.nix must pass a Go at least that new (the pinned nixos-26.05 ships Go 1.26 as go_1_26), or pin a newer nixpkgs.";
buildGoModule {
  pname = "spool";
  inherit version src;

  vendorHash = "sha256-Vgjpq6ybguwWcTVkyqSDtF8DUXBsm1nAZIEp3xuZTe0=";

  subPackages = [ "cmd/spool" ];
  # The tests of the documentation (README.md and docs/: their command lines, links, alert
  # rules, the generated CLI reference) need the files this source leaves out, so that
  # editing docs does not rebuild; CI runs them.
  checkFlags = [ "-skip" "^(TestDocs|TestCLIDocs|TestREADME|TestAlertRules)" ];
  env.CGO_ENABLED = 0;
  # Stamps the flake's version into cmd/spool's `var version`; the Go linker ignores
  # -X for a variable that does not exist, so this never breaks the build.
  ldflags = [ "-s" "-w" "-X main.version=${version}" ];

  passthru = { inherit goModGo; };

  meta = {
    description = "Distributed, persistent, append-only log that speaks the Kafka protocol";
    homepage = "https://github.com/spool-log/spool";
    mainProgram = "spool";
  };
}
