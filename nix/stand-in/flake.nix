# A stand-in for nixpkgs, used ONLY by nix/ci-check.sh:
#
#   nix flake check --no-build --override-input nixpkgs path:./nix/stand-in
#
# Debian's Nix 2.8 cannot evaluate current nixpkgs, and CI has no network to fetch it,
# so this flake provides the few nixpkgs functions Spool's flake uses — lib (with a
# small but real module system that rejects unknown options and wrongly typed
# values), buildGoModule, dockerTools.buildLayeredImage, mkShell,
# testers.runNixOSTest and lib.nixosSystem — with the same names and arguments, so
# that typos, unknown options, wrong option types and wrong attribute paths in
# flake.nix and nix/*.nix fail evaluation in CI.
#
# It builds nothing and proves nothing about the real nixpkgs: a package attribute or
# option that exists here might not exist there (each file says what it leaves out),
# and a build, the image, the NixOS test and the Go version of the pinned nixpkgs are
# only checked by a real `nix build` / `nix flake check` on a machine with network.
{
  description = "Evaluation-only stand-in for the parts of nixpkgs Spool's flake uses";

  outputs = { self }:
    let
      lib = import ./lib.nix;
      systems = [ "x86_64-linux" "aarch64-linux" ];
      nixos = import ./nixos.nix { inherit lib pkgsFor; };
      pkgsFor = system: import ./pkgs.nix { inherit lib system nixos; };
    in
    {
      lib = lib // { inherit (nixos) nixosSystem; };
      legacyPackages = lib.genAttrs systems pkgsFor;
    };
}
