{
  description = "Spool: a distributed log that speaks the Kafka protocol";

  # nixpkgs is the only input, so one `--override-input nixpkgs …` covers everything.
  # It is pinned by revision in the URL, because no flake.lock can be written on the
  # machines Spool is developed on (no network to GitHub): this revision is the NixOS
  # 26.05 release branch (nixos-26.05, the channel that has passed the NixOS tests) as
  # of 2026-09-27. To refresh, on a machine with network:
  #   git ls-remote https://github.com/NixOS/nixpkgs refs/heads/nixos-26.05
  # put the printed revision here, then `nix flake lock` (and commit flake.lock) and
  # `nix flake check -L`. Spool builds with that release's go_1_26 (below), which must be
  # at least go.mod's `go` line (nix/package.nix asserts it at evaluation).
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/cf5e76507c6e23b59f7e0ffcc7baa2a39ddd8442";

  outputs = { self, nixpkgs }:
    let
      inherit (nixpkgs) lib;
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAllSystems = f: lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});

      # Docker tags allow [A-Za-z0-9_.-], so no `+` here.
      version = "0.1.0-" + (self.shortRev or "dirty");

      # go.mod says `go 1.26.0`: Go 1.26 by name (nixos-26.05's go_1_26 and the
      # buildGoModule that uses it), not the release's default `go`, so the build never
      # depends on which Go nixpkgs picks as default. The dev shell gets the same Go.
      goFor = pkgs: { go = pkgs.go_1_26; buildGoModule = pkgs.buildGo126Module; };
    in
    {
      packages = forAllSystems (pkgs:
        let spool = pkgs.callPackage ./nix/package.nix ({ inherit version; } // goFor pkgs);
        in {
          default = spool;
          inherit spool;
          image = pkgs.callPackage ./nix/image.nix { inherit spool; };
        });

      nixosModules.default = import ./nix/module.nix { inherit self; };

      checks = forAllSystems (pkgs: {
        cluster = pkgs.testers.runNixOSTest (import ./nix/test.nix { inherit self; });
      });

      devShells = forAllSystems (pkgs: {
        default = pkgs.callPackage ./nix/shell.nix { inherit (goFor pkgs) go; };
      });
    };
}
