# nix-instantiate --eval --strict --read-write-mode nix/ci/eval-example.nix
#
# Evaluates ./example.nix (services.spool with every option set) in a NixOS
# configuration built by the stand-in nixpkgs, calling flake.nix's outputs directly
# (flakes cannot take this extra module from the command line). Prints the unit's
# ExecStart after forcing the whole system derivation.
let
  standIn = (import ../stand-in/flake.nix).outputs { self = standIn; };
  self = (import ../../flake.nix).outputs { inherit self; nixpkgs = standIn; }
    // { outPath = toString ../..; };
  nixos = standIn.lib.nixosSystem {
    system = "x86_64-linux";
    modules = [ self.nixosModules.default ./example.nix ];
  };
in
builtins.seq nixos.config.system.build.toplevel.drvPath
  nixos.config.systemd.services.spool.serviceConfig.ExecStart
