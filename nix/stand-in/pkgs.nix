# The packages and builders of nixpkgs that Spool's flake uses, as unbuildable
# derivations. Each builder accepts only the arguments the flake is expected to
# pass (a superset of what nix/ uses, all of which exist in nixpkgs), so a misspelt
# argument fails here; nixpkgs' buildGoModule would silently pass an unknown
# argument on to the build as an environment variable, so the stand-in is stricter
# there. Package names are checked only against the short list below (written from
# nixpkgs' attribute names); versions here are made up and say nothing about the
# pinned nixpkgs. Nothing here can be built: the builder exits 1.
{ lib, system, nixos }:
let
  standInDerivation = attrs: builtins.derivation ({
    inherit system;
    builder = "/bin/sh";
    args = [ "-c" "echo 'this derivation comes from the Nix stand-in in nix/stand-in and cannot be built' >&2; exit 1" ];
  } // attrs);

  fake = pname: version: extra:
    let drv = standInDerivation { name = "${pname}-${version}"; };
    in drv // { inherit pname version; meta = { mainProgram = pname; } // (extra.meta or { }); } // removeAttrs extra [ "meta" ];

  metaKeys = [ "description" "longDescription" "homepage" "license" "mainProgram" "platforms" "maintainers" "changelog" "broken" ];
  checkMeta = who: meta:
    let bad = builtins.filter (k: !(builtins.elem k metaKeys)) (builtins.attrNames meta); in
    if bad != [ ] then throw "${who}: unknown meta attribute `${builtins.head bad}' (allowed: ${toString metaKeys})"
    else if meta ? mainProgram && !builtins.isString meta.mainProgram then throw "${who}: meta.mainProgram must be a string"
    else meta;

  isSRI = h: builtins.isString h && builtins.match "sha256-[A-Za-z0-9+/]{43}=" h != null;

  buildGoModule =
    { pname, version, src, vendorHash
    , subPackages ? [ ], excludedPackages ? [ ], modRoot ? "./", proxyVendor ? false
    , ldflags ? [ ], tags ? [ ], env ? { }, doCheck ? true, checkFlags ? [ ], preCheck ? ""
    , nativeBuildInputs ? [ ], buildInputs ? [ ], nativeCheckInputs ? [ ], postInstall ? ""
    , passthru ? { }, meta ? { }
    }:
    assert lib.isStringLike src || throw "buildGoModule: src must be a path or source";
    assert (vendorHash == null || isSRI vendorHash)
      || throw "buildGoModule: vendorHash must be null or an SRI sha256 hash (sha256-…=), got ${builtins.toJSON vendorHash}";
    assert builtins.all builtins.isString ldflags || throw "buildGoModule: ldflags must be a list of strings";
    assert builtins.all builtins.isString subPackages || throw "buildGoModule: subPackages must be a list of strings";
    let
      # buildGoModule's fixed-output derivation: its output is `go mod vendor`'s vendor/,
      # hashed as a NAR (`nix hash path vendor`). Only the hash format is checked here;
      # nix/ci-check.sh recomputes the hash itself.
      goModules = if vendorHash == null then null else builtins.derivation {
        inherit system;
        name = "${pname}-${version}-go-modules";
        builder = "/bin/sh";
        args = [ "-c" "exit 1" ];
        inherit src;
        outputHash = vendorHash;
        outputHashMode = "recursive";
      };
      drv = standInDerivation {
        name = "${pname}-${version}";
        # nix/ci-check.sh's checkphase stage reads these to run the tests as checkPhase does.
        inherit src subPackages ldflags tags doCheck checkFlags preCheck postInstall;
        goModules = if goModules == null then "" else goModules;
        env = builtins.toJSON env;
      };
    in
    drv // passthru // {
      inherit pname version src vendorHash goModules passthru;
      meta = checkMeta "buildGoModule ${pname}" meta;
    };

  ociConfigKeys = [ "User" "ExposedPorts" "Env" "Entrypoint" "Cmd" "Volumes" "WorkingDir" "Labels" "StopSignal" "Healthcheck" ];
  checkImageConfig = name: config:
    let
      bad = builtins.filter (k: !(builtins.elem k ociConfigKeys)) (builtins.attrNames config);
      strList = k: !(config ? ${k}) || (builtins.isList config.${k} && builtins.all lib.isStringLike config.${k});
      emptySets = k: !(config ? ${k}) || builtins.all (v: v == { }) (builtins.attrValues config.${k});
    in
    if bad != [ ] then throw "image ${name}: `${builtins.head bad}' is not an OCI image config field (${toString ociConfigKeys})"
    else if !(strList "Entrypoint" && strList "Cmd" && strList "Env") then throw "image ${name}: Entrypoint, Cmd and Env must be lists of strings"
    else if config ? Env && !builtins.all (e: builtins.match "[A-Za-z_][A-Za-z0-9_]*=.*" e != null) config.Env then throw "image ${name}: Env entries must be NAME=value"
    else if config ? ExposedPorts && !builtins.all (p: builtins.match "[0-9]+/(tcp|udp)" p != null) (builtins.attrNames config.ExposedPorts) then throw "image ${name}: ExposedPorts keys must be PORT/tcp or PORT/udp"
    else if !(emptySets "ExposedPorts" && emptySets "Volumes") then throw "image ${name}: ExposedPorts and Volumes values must be {}"
    else if config ? User && !builtins.isString config.User then throw "image ${name}: User must be a string"
    else config;

  streamLayeredImage =
    { name, tag ? null, fromImage ? null, contents ? [ ], config ? { }, architecture ? null
    , created ? "1970-01-01T00:00:01Z", uid ? 0, gid ? 0, uname ? "root", gname ? "root"
    , maxLayers ? 100, extraCommands ? "", fakeRootCommands ? "", enableFakechroot ? false
    , includeStorePaths ? true, passthru ? { }, meta ? { }
    }:
    let checked = checkImageConfig name config; in
    standInDerivation {
      name = "${name}.tar.gz";
      contents = lib.toList contents;
      config = builtins.toJSON checked;
      inherit extraCommands fakeRootCommands;
    } // passthru // { imageName = name; imageTag = if tag == null then "latest" else tag; inherit meta; };

  pkgs = {
    inherit lib system standInDerivation;
    stdenv.hostPlatform.system = system;
    callPackage = fn: overrides:
      let f = if builtins.isFunction fn then fn else import fn;
      in f (builtins.intersectAttrs (builtins.functionArgs f) pkgs // overrides);

    inherit buildGoModule;
    dockerTools = {
      inherit streamLayeredImage;
      buildLayeredImage = streamLayeredImage;
      caCertificates = fake "ca-certificates" "stand-in" { };
      fakeNss = fake "fake-nss" "stand-in" { };
    };
    testers.runNixOSTest = nixos.runNixOSTest system;

    mkShell = { name ? "nix-shell", packages ? [ ], nativeBuildInputs ? [ ], buildInputs ? [ ], inputsFrom ? [ ], shellHook ? "", ... } @ attrs:
      assert builtins.all lib.isDerivation (packages ++ nativeBuildInputs ++ buildInputs) || throw "mkShell: packages must be derivations";
      standInDerivation ({ inherit name shellHook; packages = packages ++ nativeBuildInputs ++ buildInputs; }
        // builtins.mapAttrs (_: v: if builtins.isAttrs v then builtins.toJSON v else v)
             (removeAttrs attrs [ "name" "packages" "nativeBuildInputs" "buildInputs" "inputsFrom" "shellHook" ]));

    # Versions are placeholders except the Gos' major.minor, which the flake compares with
    # go.mod. go_1_26 (with buildGo126Module) is in nixos-25.11 and nixos-26.05. The default
    # `go` is 1.25 here on purpose: it is nixos-25.11's, and that nixos-26.05's default is
    # newer could not be checked offline, so the flake must ask for go_1_26 by name.
    go = fake "go" "1.25.9" { meta.mainProgram = "go"; };
    go_1_26 = fake "go" "1.26.2" { meta.mainProgram = "go"; };
    buildGo126Module = buildGoModule;
    gopls = fake "gopls" "stand-in" { };
    gotools = fake "gotools" "stand-in" { };
    golangci-lint = fake "golangci-lint" "stand-in" { };
    delve = fake "delve" "stand-in" { meta.mainProgram = "dlv"; };
    kcat = fake "kcat" "stand-in" { };
    nodejs = fake "nodejs" "stand-in" { meta.mainProgram = "node"; };
    python3Packages.pyflakes = fake "pyflakes" "stand-in" { };
    jq = fake "jq" "stand-in" { };
    openssl = fake "openssl" "stand-in" { };
    git = fake "git" "stand-in" { };
  };
in
pkgs
