# The slice of NixOS that nix/module.nix and the test machines of nix/test.nix touch, declared
# with NixOS's own option names and types, for nix/ci/module-eval.nix, which evaluates the
# module with nixpkgs' real lib.evalModules (nix/nixpkgs-lib). Written for Spool, not copied
# from NixOS; where NixOS does something, this does the same thing the same way:
#
#   assertions, warnings      nixos/modules/misc/assertions.nix; a failed assertion stops the
#                             evaluation of system.build.toplevel with "Failed assertions:" and
#                             one "- MESSAGE" line each, as nixos/modules/system/activation/top-level.nix
#   systemd.services          nixos/lib/systemd-unit-options.nix: unit names must be NAME.service,
#                             NAME.target…, serviceConfig is `attrsOf unitOption` checked for
#                             Type= and Restart= values; rendered as nixos/lib/systemd-lib.nix
#                             serviceToUnit does: [Unit] from unitConfig (Description, After,
#                             Wants… folded in), [Service] with one Environment="NAME=VALUE" per
#                             variable (PATH from `path`, with the default path NixOS gives every
#                             service), then serviceConfig, one NAME=VALUE per line (a list gives
#                             one line per item, true/false for Booleans), [Install] WantedBy=
#   networking.firewall       nixos/modules/services/networking/firewall.nix: lists of ports,
#                             sorted and deduplicated
#   environment.systemPackages, networking.hostName, system.stateVersion
#   virtualisation.*, networking.primaryIPAddress
#                             what the NixOS test framework gives every test machine
#
# Not here: every other NixOS option (so a module that sets one fails here with "The option …
# does not exist", prompting an addition below), and the meaning of each systemd directive,
# which `systemd-analyze verify` checks on the rendered unit (nix/ci-check.sh).
{ config, lib, pkgs, ... }:
let
  inherit (lib) mkOption types;

  # nixos/lib/systemd-lib.nix: unitNameType
  unitName = types.strMatching "[a-zA-Z0-9@%:_.\\-]+[.](service|socket|device|mount|automount|swap|target|path|timer|scope|slice)";
  unitNames = mkOption { type = types.listOf unitName; default = [ ]; };

  # nixos/lib/systemd-unit-options.nix: unitOption, a value or a list of values; lists from
  # several definitions are concatenated, other values must agree.
  unitOption = lib.mkOptionType {
    name = "systemd option";
    merge = loc: defs:
      let defs' = lib.filterOverrides defs; in
      if lib.any (d: builtins.isList d.value) defs'
      then lib.concatMap (d: lib.toList d.value) defs'
      else lib.mergeEqualOption loc defs';
  };

  # nixos/lib/systemd-lib.nix: checkUnitConfig "Service" [ assertValueOneOf "Type" …; "Restart" … ]
  oneOfOrAbsent = name: values: attrs:
    lib.optional (attrs ? ${name} && !(lib.elem attrs.${name} values))
      "Systemd Service field `${name}' cannot have value `${toString attrs.${name}}'.";
  checkService = attrs:
    let
      plain = lib.mapAttrs (_: v: if lib.elem (v._type or "") [ "override" "if" ] then v.content else v) attrs;
      errors =
        oneOfOrAbsent "Type" [ "exec" "simple" "forking" "oneshot" "dbus" "notify" "notify-reload" "idle" ] plain
        ++ oneOfOrAbsent "Restart" [ "no" "on-success" "on-failure" "on-abnormal" "on-abort" "always" ] plain;
    in
    if errors == [ ] then true else builtins.trace (lib.concatStringsSep "\n" errors) false;

  serviceModule = { name, config, options, ... }: {
    options = {
      name = mkOption { type = types.str; };
      enable = mkOption { type = types.bool; default = true; };
      description = mkOption { type = types.singleLineStr; default = ""; };
      documentation = mkOption { type = types.listOf types.str; default = [ ]; };
      wantedBy = unitNames; requiredBy = unitNames; upheldBy = unitNames;
      wants = unitNames; requires = unitNames; requisite = unitNames; upholds = unitNames;
      after = unitNames; before = unitNames; bindsTo = unitNames; partOf = unitNames;
      conflicts = unitNames; onFailure = unitNames; onSuccess = unitNames;
      startLimitBurst = mkOption { type = types.int; };
      startLimitIntervalSec = mkOption { type = types.int; };
      environment = mkOption {
        type = types.attrsOf (types.nullOr (types.oneOf [ types.str types.path types.package ]));
        default = { };
      };
      path = mkOption { type = types.listOf (types.oneOf [ types.package types.str ]); default = [ ]; };
      serviceConfig = mkOption { type = types.addCheck (types.attrsOf unitOption) checkService; default = { }; };
      unitConfig = mkOption { type = types.attrsOf unitOption; default = { }; };
      script = mkOption { type = types.lines; default = ""; };
      preStart = mkOption { type = types.lines; default = ""; };
      postStart = mkOption { type = types.lines; default = ""; };
      restartIfChanged = mkOption { type = types.bool; default = true; };
      reloadIfChanged = mkOption { type = types.bool; default = false; };
      stopIfChanged = mkOption { type = types.bool; default = true; };
      restartTriggers = mkOption { type = types.listOf types.unspecified; default = [ ]; };
    };
    config = {
      name = "${name}.service";
      # The default path of every NixOS service (systemd-lib.nix stage2ServiceConfig).
      path = lib.mkAfter [ pkgs.coreutils pkgs.findutils pkgs.gnugrep pkgs.gnused pkgs.systemd ];
      environment.PATH = lib.mkIf (config.path != [ ])
        "${lib.makeBinPath config.path}:${lib.makeSearchPathOutput "bin" "sbin" config.path}";
      unitConfig =
        let words = l: lib.concatStringsSep " " l; nonEmpty = n: l: lib.optionalAttrs (l != [ ]) { ${n} = words l; }; in
        nonEmpty "Requires" config.requires // nonEmpty "Wants" config.wants // nonEmpty "Upholds" config.upholds
        // nonEmpty "After" config.after // nonEmpty "Before" config.before // nonEmpty "BindsTo" config.bindsTo
        // nonEmpty "PartOf" config.partOf // nonEmpty "Conflicts" config.conflicts // nonEmpty "Requisite" config.requisite
        // nonEmpty "Documentation" config.documentation // nonEmpty "OnFailure" config.onFailure
        // nonEmpty "OnSuccess" config.onSuccess
        // lib.optionalAttrs (config.description != "") { Description = config.description; }
        // lib.optionalAttrs options.startLimitIntervalSec.isDefined { StartLimitIntervalSec = toString config.startLimitIntervalSec; }
        // lib.optionalAttrs options.startLimitBurst.isDefined { StartLimitBurst = toString config.startLimitBurst; };
    };
  };

  # nixos/lib/systemd-lib.nix: toOption, attrsToSection, serviceToUnit
  toOption = x: if x == true then "true" else if x == false then "false" else toString x;
  section = attrs: lib.concatStrings (lib.concatLists (lib.mapAttrsToList
    (name: value: map (x: "${name}=${toOption x}\n") (lib.toList value)) attrs));
  serviceText = def:
    "[Unit]\n" + section def.unitConfig + "\n"
    + "[Service]\n"
    + lib.concatMapStrings (n: lib.optionalString (def.environment.${n} != null)
        "Environment=${builtins.toJSON "${n}=${toString def.environment.${n}}"}\n") (builtins.attrNames def.environment)
    + lib.optionalString def.reloadIfChanged "X-ReloadIfChanged=true\n"
    + lib.optionalString (!def.reloadIfChanged && !def.restartIfChanged) "X-RestartIfChanged=false\n"
    + lib.optionalString (!def.stopIfChanged) "X-StopIfChanged=false\n"
    + section def.serviceConfig
    + lib.optionalString (def.wantedBy != [ ]) "\n[Install]\nWantedBy=${lib.concatStringsSep " " def.wantedBy}\n";

  # nixos/modules/services/networking/firewall.nix: canonicalizePortList
  portList = mkOption { type = types.listOf types.port; default = [ ]; apply = ports: lib.unique (builtins.sort builtins.lessThan ports); };
in
{
  options = {
    assertions = mkOption { type = types.listOf types.unspecified; internal = true; default = [ ]; };
    warnings = mkOption { type = types.listOf types.str; internal = true; default = [ ]; };

    system.stateVersion = mkOption { type = types.str; default = lib.trivial.release; };
    system.build = mkOption { type = types.lazyAttrsOf types.unspecified; default = { }; internal = true; };

    networking.hostName = mkOption {
      type = types.strMatching "^$|^[[:alnum:]]([[:alnum:]_-]{0,61}[[:alnum:]])?$";
      default = "nixos";
    };
    networking.firewall = {
      enable = mkOption { type = types.bool; default = true; };
      allowedTCPPorts = portList;
      allowedUDPPorts = portList;
    };

    environment.systemPackages = mkOption { type = types.listOf types.package; default = [ ]; };

    systemd.services = mkOption { type = types.attrsOf (types.submodule serviceModule); default = { }; };

    # The NixOS test framework's (nixos/lib/testing/network.nix, nixos/modules/virtualisation/qemu-vm.nix).
    networking.primaryIPAddress = mkOption { type = types.str; default = ""; };
    virtualisation.memorySize = mkOption { type = types.ints.positive; default = 1024; };
    virtualisation.cores = mkOption { type = types.ints.positive; default = 1; };
  };

  config.system.build = {
    units = lib.mapAttrs' (_: s: lib.nameValuePair s.name (serviceText s))
      (lib.filterAttrs (_: s: s.enable) config.systemd.services);

    # nixos/modules/system/activation/top-level.nix: failed assertions stop the build of the
    # system, warnings are printed.
    toplevel =
      let failed = map (a: a.message) (builtins.filter (a: !a.assertion) config.assertions); in
      if failed != [ ] then throw "\nFailed assertions:\n${lib.concatMapStringsSep "\n" (m: "- ${m}") failed}"
      else lib.foldr (w: x: lib.warn w x) {
        inherit (config.system.build) units;
        packages = map toString config.environment.systemPackages;
        firewall = { inherit (config.networking.firewall) enable allowedTCPPorts allowedUDPPorts; };
      } config.warnings;
  };
}
