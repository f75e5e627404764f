{
  description = "Spool: a distributed log that speaks the Kafka protocol";

  # nixpkgs is the only input, so one `--override-input nixpkgs …` covers
  # everything. nixos-unstable is nixpkgs' branch that has passed the NixOS tests;
  # its Go must be at least go.mod's `go` line (nix/package.nix checks this at
  # evaluation). flake.lock pins the revision: create or refresh it with
  # `nix flake lock` / `nix flake update` on a machine with network.
  inputs.nixpkgs.url = "github:NixOS/nixpkgs/nixos-unstable";

  outputs = { self, nixpkgs }:
    let
      inherit (nixpkgs) lib;
      systems = [ "x86_64-linux" "aarch64-linux" ];
      forAllSystems = f: lib.genAttrs systems (system: f nixpkgs.legacyPackages.${system});

      # Docker tags allow [A-Za-z0-9_.-], so no `+` here.
      version = "0.1.0-" + (self.shortRev or "dirty");
    in
    {
      packages = forAllSystems (pkgs:
        let spool = pkgs.callPackage ./nix/package.nix { inherit version; };
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
        default = pkgs.callPackage ./nix/shell.nix { };
      });
    };
}
