# A stand-in for the slice of NixOS that Spool's module and test touch: the options
# they define, declared with the same names and types as NixOS, and a
# `system.build.toplevel` that renders every systemd unit, fails on failed
# `assertions` (as NixOS does), and instantiates a derivation so that every
# string in the configuration is forced.
#
# Not checked here: any NixOS option not declared below (an option that exists in
# NixOS but not here fails here, prompting an addition); the meaning of systemd
# directives (serviceConfig is an attribute set of unit values, as in NixOS, so a
# misspelt directive such as `ProtectSytem' passes here AND in NixOS; systemd
# itself warns at boot, which only the real NixOS test would show).
{ lib, pkgsFor }:
let
  inherit (lib) mkOption types;

  unitValue = lib.mkOptionType {
    name = "systemd option";
    description = "systemd unit value (string, Boolean, integer, path, package, or a list of them)";
    check = x:
      let scalar = y: builtins.isString y || builtins.isBool y || builtins.isInt y || builtins.isPath y || lib.isDerivation y;
      in scalar x || (builtins.isList x && builtins.all scalar x);
    merge = loc: defs:
      let values = map (d: d.value) defs; in
      if builtins.any builtins.isList values
      then builtins.concatLists (map lib.toList values)
      else lib.mergeEqualOption loc defs;
  };

  listOfStr = mkOption { type = types.listOf types.str; default = [ ]; };

  serviceModule = { name, ... }: {
    options = {
      enable = mkOption { type = types.bool; default = true; };
      description = mkOption { type = types.str; default = ""; };
      wantedBy = listOfStr; requiredBy = listOfStr; after = listOfStr; before = listOfStr;
      wants = listOfStr; requires = listOfStr; bindsTo = listOfStr; partOf = listOfStr;
      conflicts = listOfStr;
      environment = mkOption { type = types.attrsOf (types.nullOr (types.oneOf [ types.str types.path types.package ])); default = { }; };
      path = mkOption { type = types.listOf (types.either types.package types.str); default = [ ]; };
      serviceConfig = mkOption { type = types.attrsOf unitValue; default = { }; };
      unitConfig = mkOption { type = types.attrsOf unitValue; default = { }; };
      startLimitBurst = mkOption { type = types.nullOr types.int; default = null; };
      startLimitIntervalSec = mkOption { type = types.nullOr types.int; default = null; };
      script = mkOption { type = types.lines; default = ""; };
      preStart = mkOption { type = types.lines; default = ""; };
      postStart = mkOption { type = types.lines; default = ""; };
      restartIfChanged = mkOption { type = types.bool; default = true; };
      stopIfChanged = mkOption { type = types.bool; default = true; };
      restartTriggers = mkOption { type = types.listOf types.unspecified; default = [ ]; };
      _name = mkOption { type = types.str; default = name; internal = true; };
    };
  };

  etcModule = { name, ... }: {
    options = {
      text = mkOption { type = types.nullOr types.lines; default = null; };
      source = mkOption { type = types.nullOr types.path; default = null; };
      mode = mkOption { type = types.str; default = "symlink"; };
      user = mkOption { type = types.str; default = "+0"; };
      group = mkOption { type = types.str; default = "+0"; };
      target = mkOption { type = types.str; default = name; };
    };
  };

  userModule = { name, ... }: {
    options = {
      name = mkOption { type = types.str; default = name; };
      isSystemUser = mkOption { type = types.bool; default = false; };
      isNormalUser = mkOption { type = types.bool; default = false; };
      group = mkOption { type = types.str; default = ""; };
      extraGroups = listOfStr;
      home = mkOption { type = types.path; default = "/var/empty"; };
      createHome = mkOption { type = types.bool; default = false; };
      description = mkOption { type = types.str; default = ""; };
      uid = mkOption { type = types.nullOr types.int; default = null; };
    };
  };

  renderValue = v:
    if builtins.isBool v then (if v then "true" else "false")
    else toString v;

  renderUnit = name: svc:
    let
      section = title: attrs: "[${title}]\n" + lib.concatStrings (lib.mapAttrsToList
        (k: v: lib.concatMapStrings (x: "${k}=${renderValue x}\n") (lib.toList v))
        (lib.filterAttrs (_: v: v != [ ] && v != null) attrs));
    in
    section "Unit" ({
      Description = svc.description;
      After = lib.concatStringsSep " " svc.after; Before = lib.concatStringsSep " " svc.before;
      Wants = lib.concatStringsSep " " svc.wants; Requires = lib.concatStringsSep " " svc.requires;
      StartLimitBurst = svc.startLimitBurst; StartLimitIntervalSec = svc.startLimitIntervalSec;
    } // svc.unitConfig)
    + section "Service" ({
      Environment = lib.mapAttrsToList (k: v: "\"${k}=${toString v}\"") (lib.filterAttrs (_: v: v != null) svc.environment);
    } // svc.serviceConfig)
    + section "Install" { WantedBy = lib.concatStringsSep " " svc.wantedBy; };

  base = { config, pkgs, ... }: {
    _file = "nix/stand-in/nixos.nix";
    options = {
      assertions = mkOption {
        type = types.listOf (types.submodule {
          options.assertion = mkOption { type = types.bool; };
          options.message = mkOption { type = types.str; };
        });
        default = [ ];
      };
      warnings = mkOption { type = types.listOf types.str; default = [ ]; };
      system.stateVersion = mkOption { type = types.str; default = "26.05"; };
      system.build.toplevel = mkOption { type = types.raw; };
      networking.hostName = mkOption { type = types.strMatching "[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?|"; default = "nixos"; };
      networking.firewall = {
        enable = mkOption { type = types.bool; default = true; };
        allowedTCPPorts = mkOption { type = types.listOf types.port; default = [ ]; };
        allowedUDPPorts = mkOption { type = types.listOf types.port; default = [ ]; };
      };
      environment.systemPackages = mkOption { type = types.listOf types.package; default = [ ]; };
      environment.etc = mkOption { type = types.attrsOf (types.submodule etcModule); default = { }; };
      users.users = mkOption { type = types.attrsOf (types.submodule userModule); default = { }; };
      users.groups = mkOption {
        type = types.attrsOf (types.submodule { options.gid = mkOption { type = types.nullOr types.int; default = null; }; });
        default = { };
      };
      systemd.services = mkOption { type = types.attrsOf (types.submodule serviceModule); default = { }; };
    };
    config.system.build.toplevel =
      let
        failed = builtins.filter (a: !a.assertion) config.assertions;
        units = lib.mapAttrs renderUnit (lib.filterAttrs (_: s: s.enable) config.systemd.services);
        etc = lib.mapAttrs (_: e: if e.text != null then e.text else toString e.source) config.environment.etc;
      in
      if failed != [ ] then
        throw "\nFailed assertions:\n${lib.concatMapStringsSep "\n" (a: "- ${a.message}") failed}"
      else
        lib.foldr (w: x: builtins.trace "warning: ${w}" x)
          (pkgs.standInDerivation {
            name = "nixos-system-${config.networking.hostName}";
            units = builtins.toJSON units;
            etc = builtins.toJSON etc;
            packages = map toString config.environment.systemPackages;
            firewall = builtins.toJSON config.networking.firewall;
          })
          config.warnings;
  };

  # What the NixOS test framework adds to every node (nixos/modules/virtualisation/qemu-vm.nix).
  vm = {
    _file = "nix/stand-in/nixos.nix (qemu-vm)";
    options.virtualisation = {
      memorySize = mkOption { type = types.ints.positive; default = 1024; };
      cores = mkOption { type = types.ints.positive; default = 1; };
      diskSize = mkOption { type = types.ints.positive; default = 1024; };
      vlans = mkOption { type = types.listOf types.ints.unsigned; default = [ 1 ]; };
      graphics = mkOption { type = types.bool; default = true; };
    };
    # nixos/lib/testing/network.nix: node N (in name order) is 192.168.1.N on vlan 1.
    options.networking.primaryIPAddress = mkOption { type = types.str; default = ""; };
  };

  nixosSystem = { system ? "x86_64-linux", modules, specialArgs ? { }, extraModules ? [ ] }:
    let
      pkgs = pkgsFor system;
      utils = {
        # nixos/lib/utils.nix
        escapeSystemdExecArg = arg:
          let s =
            if builtins.isPath arg then "${arg}"
            else if builtins.isString arg then arg
            else if builtins.isInt arg || lib.isDerivation arg then toString arg
            else throw "escapeSystemdExecArg only allows strings, paths, numbers and derivations";
          in builtins.replaceStrings [ "%" "$" ] [ "%%" "$$" ] (builtins.toJSON s);
        escapeSystemdExecArgs = args: lib.concatStringsSep " " (map utils.escapeSystemdExecArg args);
      };
      ev = lib.evalModules {
        modules = [ base ] ++ extraModules ++ modules;
        specialArgs = { inherit pkgs utils; modulesPath = "/stand-in/nixos/modules"; } // specialArgs;
      };
    in ev // { inherit pkgs; };

  # pkgs.testers.runNixOSTest: the test itself is a module (as in nixpkgs), so a
  # misspelt test attribute fails too. The result is an unbuildable derivation
  # carrying `driver`, `nodes` and `config` like the real one.
  runNixOSTest = system: testModule:
    let
      pkgs = pkgsFor system;
      test = (lib.evalModules {
        modules = [
          {
            _file = "nix/stand-in/nixos.nix (testing)";
            options = {
              name = mkOption { type = types.str; };
              nodes = mkOption { type = types.attrsOf types.deferredModule; default = { }; };
              defaults = mkOption { type = types.deferredModule; default = { }; };
              testScript = mkOption { type = types.either types.str (types.functionTo types.str); };
              skipLint = mkOption { type = types.bool; default = false; };
              skipTypeCheck = mkOption { type = types.bool; default = false; };
              globalTimeout = mkOption { type = types.ints.positive; default = 3600; };
              enableOCR = mkOption { type = types.bool; default = false; };
              meta = mkOption { type = types.attrsOf types.anything; default = { }; };
            };
          }
          testModule
        ];
        specialArgs = { hostPkgs = pkgs; };
      }).config;
      nodeNumber = name: builtins.length (builtins.filter (n: n < name) (builtins.attrNames test.nodes)) + 1;
      nodes = lib.mapAttrs
        (name: nodeModule: nixosSystem {
          inherit system;
          extraModules = [
            vm
            {
              networking.hostName = lib.mkDefault name;
              networking.primaryIPAddress = "192.168.1.${toString (nodeNumber name)}";
            }
          ];
          modules = [ test.defaults nodeModule ];
        })
        test.nodes;
      nodeConfigs = lib.mapAttrs (_: n: n.config) nodes;
      testScript = if builtins.isFunction test.testScript then test.testScript { nodes = nodeConfigs; } else test.testScript;
      driver = pkgs.standInDerivation {
        name = "nixos-test-driver-${test.name}";
        inherit testScript;
        vms = lib.mapAttrsToList (_: c: c.system.build.toplevel) nodeConfigs;
      };
    in
    pkgs.standInDerivation { name = "vm-test-run-${test.name}"; inherit driver; }
    // { inherit driver; nodes = nodeConfigs; config = test // { inherit testScript; }; };
in
{ inherit nixosSystem runNixOSTest; }
