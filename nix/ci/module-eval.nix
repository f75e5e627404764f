# nix-instantiate --eval --strict --json nix/ci/module-eval.nix --argstr spool DIR
#
# Evaluates nix/module.nix with nixpkgs' real module system (lib.evalModules of the lib
# vendored in nix/nixpkgs-lib) and the NixOS options declared by ./nixos-slice.nix, in each
# configuration CI checks: ./minimal.nix, ./example.nix (every option set) and the three
# machines of nix/test.nix. DIR is a directory with bin/spool, the `spool` built from this
# commit; it stands for the package, so each unit's ExecStart names a real executable.
#
# Prints, per configuration, the rendered spool.service and its ExecStart. A misspelt or
# wrongly typed option or a failed assertion fails the evaluation with the module system's
# (or NixOS's) own message. `--arg only '[ "example" ]'` evaluates only the configurations named.
{ spool, system ? "x86_64-linux", only ? null }:
let
  lib = import ../nixpkgs-lib/lib;

  # Placeholders for the nixpkgs packages the module and the test machines name.
  fake = name: {
    type = "derivation";
    inherit name;
    outPath = "/nix/store/${builtins.substring 0 32 (builtins.hashString "sha256" name)}-${name}";
    meta = { };
  };
  pkgs = {
    stdenv.hostPlatform.system = system;
  } // lib.genAttrs [ "coreutils" "findutils" "gnugrep" "gnused" "systemd" "openssl" ] fake;

  spoolPackage = {
    type = "derivation";
    name = "spool-ci";
    outPath = spool;
    meta.mainProgram = "spool";
  };

  # nixos/lib/utils.nix: escapeSystemdExecArg(s), as NixOS quotes ExecStart= words.
  utils = rec {
    escapeSystemdExecArg = arg:
      let
        s =
          if builtins.isPath arg then "${arg}"
          else if builtins.isString arg then arg
          else if builtins.isInt arg || builtins.isFloat arg || lib.isDerivation arg then toString arg
          else throw "escapeSystemdExecArg only allows strings, paths, numbers and derivations";
      in
      builtins.replaceStrings [ "%" "$" ] [ "%%" "$$" ] (builtins.toJSON s);
    escapeSystemdExecArgs = args: lib.concatStringsSep " " (map escapeSystemdExecArg args);
  };

  self = {
    packages.${system}.default = spoolPackage;
    nixosModules.default = { _file = toString ../module.nix; imports = [ (import ../module.nix { inherit self; }) ]; };
  };

  evalNixOS = extra: modules: lib.evalModules {
    class = "nixos";
    modules = [ ./nixos-slice.nix extra ] ++ modules;
    specialArgs = { inherit pkgs utils; };
  };

  # What the NixOS test framework gives machine number N (in name order).
  test = import ../test.nix { inherit self; };
  testMachines = lib.imap1
    (i: name: {
      inherit name;
      value = evalNixOS
        { networking.hostName = lib.mkDefault name; networking.primaryIPAddress = "192.168.1.${toString i}"; }
        [ { _file = "${toString ../test.nix}, nodes.${name}"; imports = [ test.nodes.${name} ]; } ];
    })
    (builtins.attrNames test.nodes);

  configurations = {
    minimal = evalNixOS { } [ self.nixosModules.default ./minimal.nix ];
    example = evalNixOS { } [ self.nixosModules.default ./example.nix ];
  } // lib.mapAttrs' (_: m: lib.nameValuePair "test-${m.name}" m.value) (lib.listToAttrs (map (m: { name = m.name; value = m; }) testMachines));

  report = _: c:
    let top = c.config.system.build.toplevel; in
    builtins.seq top {
      unit = top.units."spool.service";
      execStart = c.config.systemd.services.spool.serviceConfig.ExecStart;
      inherit (top) firewall;
    };
in
lib.mapAttrs report (if only == null then configurations else lib.getAttrs only configurations)
