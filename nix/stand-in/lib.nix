# The part of nixpkgs' `lib` that Spool's flake uses, rewritten small so that Debian's
# Nix 2.8 can evaluate the flake without network (see ./flake.nix for the overview).
#
# Semantics follow nixpkgs where it matters for catching mistakes:
#   - every definition must match a declared option ("The option `x' does not exist"),
#   - every definition is checked against its option's type,
#   - mkIf / mkMerge / mkOverride (mkDefault, mkForce) are pushed down and discharged
#     the way the real module system does, with priorities,
#   - mkOption accepts only the arguments the real one accepts,
#   - an option with no default and no definition fails when it is used.
# What it does NOT do (a real nixpkgs evaluation still can fail where this passes):
#   - no _module.args, no freeformType, no disabledModules, no mkOrder/mkBefore/mkAfter,
#     no mkRenamedOptionModule, no option documentation checks;
#   - an option declared twice is an error here (nixpkgs can merge some declarations);
#   - imports are not de-duplicated;
#   - the set of types is the handful below; a type missing here is an evaluation
#     error here, which is a prompt to add it, not proof nixpkgs lacks it.
let
  inherit (builtins)
    all any attrNames concatLists concatMap concatStringsSep elem filter foldl' head
    isAttrs isBool isFunction isInt isList isPath isString length listToAttrs map tail
    typeOf;

  lib = rec {
    # ---- lists, attribute sets, strings (same results as nixpkgs lib) ----
    genAttrs = names: f: listToAttrs (map (n: { name = n; value = f n; }) names);
    mapAttrs = builtins.mapAttrs;
    attrValues = builtins.attrValues;
    mapAttrsToList = f: set: map (n: f n set.${n}) (attrNames set);
    filterAttrs = pred: set:
      listToAttrs (concatMap (n: if pred n set.${n} then [ { name = n; value = set.${n}; } ] else [ ]) (attrNames set));
    inherit concatMap concatStringsSep concatLists elem filter foldl' head tail;
    concatMapStringsSep = sep: f: list: concatStringsSep sep (map f list);
    concatStrings = concatStringsSep "";
    concatMapStrings = f: list: concatStringsSep "" (map f list);
    foldr = op: nul: list: foldl' (acc: x: op x acc) nul (lib.reverseList list);
    reverseList = list: let n = length list; in builtins.genList (i: builtins.elemAt list (n - i - 1)) n;
    optional = cond: x: if cond then [ x ] else [ ];
    optionals = cond: xs: if cond then xs else [ ];
    optionalString = cond: s: if cond then s else "";
    optionalAttrs = cond: set: if cond then set else { };
    toList = x: if isList x then x else [ x ];
    last = list: builtins.elemAt list (length list - 1);
    uniqueStrings = list: attrNames (listToAttrs (map (n: { name = n; value = null; }) list));
    imap1 = f: list: builtins.genList (i: f (i + 1) (builtins.elemAt list i)) (length list);
    hasPrefix = pre: s: builtins.substring 0 (builtins.stringLength pre) s == pre;
    hasSuffix = suf: s:
      let ls = builtins.stringLength s; lf = builtins.stringLength suf;
      in lf <= ls && builtins.substring (ls - lf) lf s == suf;
    removePrefix = pre: s:
      if hasPrefix pre s
      then builtins.substring (builtins.stringLength pre) (builtins.stringLength s) s
      else s;
    escapeRegex = builtins.replaceStrings
      (map (c: c) [ "\\" "[" "{" "(" ")" "^" "$" "?" "*" "+" "|" "." ])
      (map (c: "\\" + c) [ "\\" "[" "{" "(" ")" "^" "$" "?" "*" "+" "|" "." ]);
    hasInfix = infix: s: length (builtins.split (escapeRegex infix) s) > 1;
    splitString = sep: s: filter isString (builtins.split (escapeRegex sep) s);
    versionAtLeast = v1: v2: builtins.compareVersions v1 v2 >= 0;
    escapeShellArg = arg: "'${builtins.replaceStrings [ "'" ] [ "'\\''" ] (toString arg)}'";
    escapeShellArgs = args: concatStringsSep " " (map escapeShellArg args);
    isDerivation = x: isAttrs x && (x.type or null) == "derivation";
    isStringLike = x: isString x || isPath x || (isAttrs x && (x ? outPath || x ? __toString));
    getExe = drv:
      if drv ? meta.mainProgram then "${drv}/bin/${drv.meta.mainProgram}"
      else throw "getExe: ${drv.name or "package"} has no meta.mainProgram (nixpkgs only warns; the stand-in is stricter)";
    recursiveUpdate = a: b:
      a // mapAttrs (n: v: if isAttrs v && isAttrs (a.${n} or null) && !isDerivation v then recursiveUpdate a.${n} v else v) b;
    showOption = loc: concatStringsSep "." loc;
    trivial.version = "stand-in";

    # lib.cleanSourceWith: same store path as nixpkgs for the same filter, because both
    # are builtins.path over the same directory with the same name.
    cleanSourceWith = { src, filter ? (_: _: true), name ? "source" }:
      if src ? _isLibCleanSourceWith
      then throw "stand-in cleanSourceWith does not compose nested cleanSourceWith; use one filter"
      else {
        _isLibCleanSourceWith = true;
        origSrc = src;
        inherit filter name;
        outPath = builtins.path { path = src; inherit filter name; };
      };

    # ---- the module system ----
    mkOption =
      { default ? null, defaultText ? null, example ? null, description ? null
      , relatedPackages ? null, type ? null, apply ? null, internal ? null
      , visible ? null, readOnly ? null } @ attrs:
      attrs // { _type = "option"; type = if type == null then types.unspecified else type; };
    mkEnableOption = name: mkOption {
      type = types.bool; default = false; example = true;
      description = "Whether to enable ${name}.";
    };
    literalExpression = text: { _type = "literalExpression"; inherit text; };
    literalMD = text: { _type = "literalMD"; inherit text; };
    mkIf = condition: content: { _type = "if"; inherit condition content; };
    mkMerge = contents: { _type = "merge"; inherit contents; };
    mkOverride = priority: content: { _type = "override"; inherit priority content; };
    mkOptionDefault = mkOverride 1500;
    mkDefault = mkOverride 1000;
    mkForce = mkOverride 50;
    isOption = v: isAttrs v && (v._type or null) == "option";

    showVal = v:
      let r = builtins.tryEval (builtins.toJSON v);
      in if isFunction v then "<function>" else if r.success then r.value else "<${typeOf v}>";

    # Push mkIf/mkMerge/mkOverride on an attribute set down onto its attributes
    # (nixpkgs: pushDownProperties). Returns a list of plain attribute sets.
    pushDownProperties = loc: file: v:
      if !isAttrs v then
        throw "The option `${showOption loc}' is an attribute set of options, but ${file} defines it as ${showVal v}."
      else if (v._type or null) == "merge" then concatMap (pushDownProperties loc file) v.contents
      else if (v._type or null) == "if" then
        map (mapAttrs (_: x: mkIf v.condition x)) (pushDownProperties loc file v.content)
      else if (v._type or null) == "override" then
        map (mapAttrs (_: x: mkOverride v.priority x)) (pushDownProperties loc file v.content)
      else if v ? _type then
        throw "The option `${showOption loc}' in ${file}: unsupported property ${v._type} (stand-in)"
      else [ v ];

    # Discharge the properties of one definition of one option
    # (nixpkgs: dischargeProperties + filterOverrides). Returns a list of
    # { file, value, priority }.
    dischargeDefinition = loc: def:
      let v = def.value; t = if isAttrs v then v._type or null else null; in
      if t == "merge" then concatMap (c: dischargeDefinition loc (def // { value = c; })) v.contents
      else if t == "if" then
        (if !isBool v.condition
         then throw "mkIf condition for `${showOption loc}' in ${def.file} is not a Boolean: ${showVal v.condition}"
         else if v.condition then dischargeDefinition loc (def // { value = v.content; })
         else [ ])
      else if t == "override" then
        dischargeDefinition loc (def // { value = v.content; priority = v.priority; })
      else [ { inherit (def) file; value = v; priority = def.priority or 100; } ];

    # Merge the definitions of one option (or one attrsOf/listOf element).
    # Returns { isDefined, value }.
    mergeDefinitions = loc: type: defs:
      let
        discharged = concatMap (dischargeDefinition loc) defs;
        top = foldl' (m: d: if d.priority < m then d.priority else m) 99999 discharged;
        active = filter (d: d.priority == top) discharged;
        checked = map
          (d: if type.check d.value then d else throw ''
            A definition for option `${showOption loc}' is not of type `${type.description}'.
            Definition values:
            - In `${d.file}': ${showVal d.value}'')
          active;
      in {
        isDefined = active != [ ];
        value =
          if active == [ ] then throw "The option `${showOption loc}' is used but not defined."
          else type.merge loc checked;
      };

    evalOption = loc: opt: defs:
      let
        allDefs = defs ++ optional (opt ? default)
          { file = "the default of `${showOption loc}'"; value = mkOptionDefault opt.default; };
        merged = (mergeDefinitions loc opt.type allDefs).value;
      in if opt.apply or null != null then opt.apply merged else merged;

    # Walk the option tree along the definitions. Undeclared names fail here.
    evalTree = loc: tree: defs:
      if isOption tree then evalOption loc tree defs
      else
        let
          pushed = concatMap (d: map (v: { inherit (d) file; value = v; }) (pushDownProperties loc d.file d.value)) defs;
          unknown = filter (d: d.names != [ ])
            (map (d: { inherit (d) file; names = filter (n: !(tree ? ${n})) (attrNames d.value); }) pushed);
          firstUnknown = head unknown;
        in
        if unknown != [ ] then throw ''
          The option `${showOption (loc ++ [ (head firstUnknown.names) ])}' does not exist. Definition values:
          - In `${firstUnknown.file}'.''
        else mapAttrs
          (n: sub: evalTree (loc ++ [ n ]) sub
            (concatMap (d: if d.value ? ${n} then [ { inherit (d) file; value = d.value.${n}; } ] else [ ]) pushed))
          tree;

    # Merge option declarations from all modules into one tree.
    mergeDeclarations = loc: decls:
      let options = filter (d: isOption d.value) decls; in
      if options != [ ] then
        (if length decls == 1
         then (head options).value // { inherit loc; declarations = [ (head options).file ]; }
         else throw "The option `${showOption loc}' is declared more than once (${concatMapStringsSep ", " (d: d.file) decls}); the stand-in does not merge declarations.")
      else
        let names = uniqueStrings (concatMap
          (d: if isAttrs d.value then attrNames d.value
              else throw "Option declarations at `${showOption loc}' in ${d.file} are not an attribute set of options (did you forget mkOption?)")
          decls);
        in genAttrs names (n: mergeDeclarations (loc ++ [ n ])
          (concatMap (d: if d.value ? ${n} then [ { inherit (d) file; value = d.value.${n}; } ] else [ ]) decls));

    moduleKeys = [ "_file" "key" "imports" "options" "config" "meta" "disabledModules" ];

    # One module (path, function or attribute set) into { file, imports, options, config }.
    normalizeModule = args: fallbackFile: m:
      let
        file = if isPath m || isString m then toString m else fallbackFile;
        raw = if isPath m || isString m then import m else m;
        v = if isFunction raw then raw args else raw;
        full = v ? options || v ? config;
        extra = removeAttrs v moduleKeys;
      in
      if !isAttrs v then throw "Module ${file} is not an attribute set (got ${typeOf v})."
      else if v ? disabledModules then throw "Module ${file}: disabledModules is not supported by the stand-in."
      else if full && extra != { } then
        throw "Module ${file} has an unsupported top-level attribute `${head (attrNames extra)}' (with `options' or `config' present, definitions belong under `config')."
      else {
        file = v._file or file;
        imports = v.imports or [ ];
        options = if full then v.options or { } else { };
        config = if full then v.config or { } else removeAttrs v [ "_file" "key" "imports" "meta" ];
      };

    collectModules = args: parentFile: modules:
      concatLists (imap1
        (i: m:
          let n = normalizeModule args "${parentFile}:anon-${toString i}" m;
          in [ n ] ++ collectModules args n.file n.imports)
        modules);

    evalModules = { modules, specialArgs ? { }, prefix ? [ ] }:
      let
        args = specialArgs // { inherit lib config options; };
        collected = collectModules args "<unknown-file>" modules;
        options = mergeDeclarations prefix (map (m: { inherit (m) file; value = m.options; }) collected);
        config = evalTree prefix options (map (m: { inherit (m) file; value = m.config; }) collected);
      in { inherit config options; _type = "configuration"; };

    # ---- option types ----
    mergeOneOption = loc: defs:
      if length defs == 1 then (head defs).value
      else throw "The option `${showOption loc}' is defined more than once (${concatMapStringsSep ", " (d: d.file) defs}); it takes one definition.";
    mergeEqualOption = loc: defs:
      if length defs == 1 then (head defs).value
      else if all (d: d.value == (head defs).value) defs then (head defs).value
      else throw "The option `${showOption loc}' has conflicting definition values:${concatMapStringsSep "" (d: "\n- In `${d.file}': ${showVal d.value}") defs}";

    mkOptionType =
      { name, description ? name, check ? (_: true), merge ? mergeEqualOption
      , nestedTypes ? { }, descriptionClass ? null, emptyValue ? { }, getSubOptions ? (_: { })
      , getSubModules ? null, substSubModules ? null, typeMerge ? null, functor ? null
      , deprecationMessage ? null }:
      { _type = "option-type"; inherit name description check merge nestedTypes; };

    types = rec {
      unspecified = anything // { name = "unspecified"; description = "unspecified value"; };
      anything = mkOptionType {
        name = "anything"; description = "anything";
        merge = loc: defs:
          let values = map (d: d.value) defs; in
          if all isList values then concatLists values
          else if all (v: isAttrs v && !lib.isDerivation v) values then
            mapAttrs (n: _: (mergeDefinitions (loc ++ [ n ]) anything
              (concatMap (d: if d.value ? ${n} then [ { inherit (d) file; value = d.value.${n}; } ] else [ ]) defs)).value)
              (foldl' (a: v: a // v) { } values)
          else mergeEqualOption loc defs;
      };
      raw = mkOptionType { name = "raw"; description = "raw value"; merge = mergeOneOption; };
      bool = mkOptionType { name = "bool"; description = "boolean"; check = isBool; };
      int = mkOptionType { name = "int"; description = "signed integer"; check = isInt; };
      ints = rec {
        between = lo: hi: mkOptionType {
          name = "intBetween"; description = "integer between ${toString lo} and ${toString hi} (both inclusive)";
          check = x: isInt x && x >= lo && x <= hi;
        };
        unsigned = mkOptionType { name = "unsignedInt"; description = "unsigned integer, meaning >=0"; check = x: isInt x && x >= 0; };
        positive = mkOptionType { name = "positiveInt"; description = "positive integer, meaning >0"; check = x: isInt x && x > 0; };
        u16 = between 0 65535;
        s32 = between (-2147483648) 2147483647;
      };
      port = ints.u16 // { name = "port"; description = "16 bit unsigned integer; between 0 and 65535 (both inclusive)"; };
      str = mkOptionType { name = "str"; description = "string"; check = isString; };
      nonEmptyStr = addCheck str (s: builtins.match "[ \t\n]*" s == null) // { name = "nonEmptyStr"; description = "non-empty string"; };
      strMatching = pattern: mkOptionType {
        name = "strMatching ${builtins.toJSON pattern}";
        description = "string matching the pattern ${pattern}";
        check = x: isString x && builtins.match pattern x != null;
      };
      lines = mkOptionType {
        name = "lines"; description = "strings concatenated with \"\\n\""; check = isString;
        merge = _loc: defs: concatStringsSep "\n" (map (d: d.value) defs);
      };
      path = mkOptionType {
        name = "path"; description = "path";
        check = x: lib.isStringLike x && builtins.substring 0 1 (toString x) == "/";
        merge = mergeEqualOption;
      };
      package = mkOptionType {
        name = "package"; description = "package";
        check = x: lib.isDerivation x || (isString x && lib.hasPrefix builtins.storeDir x);
        merge = mergeOneOption;
      };
      enum = values: mkOptionType {
        name = "enum";
        description = "one of ${concatMapStringsSep ", " builtins.toJSON values}";
        check = x: elem x values;
      };
      addCheck = elemType: extra: elemType // { check = x: elemType.check x && extra x; };
      nullOr = elemType: mkOptionType {
        name = "nullOr"; description = "null or ${elemType.description}";
        check = x: x == null || elemType.check x;
        merge = loc: defs:
          let nulls = filter (d: d.value == null) defs; in
          if nulls == defs then null
          else if nulls == [ ] then elemType.merge loc defs
          else throw "The option `${showOption loc}' is defined both null and not null (${concatMapStringsSep ", " (d: d.file) defs}).";
        nestedTypes.elemType = elemType;
      };
      listOf = elemType: mkOptionType {
        name = "listOf"; description = "list of ${elemType.description}";
        check = isList;
        merge = loc: defs: concatLists (imap1
          (i: def: concatLists (imap1
            (j: x:
              let r = mergeDefinitions (loc ++ [ "[definition ${toString i}-entry ${toString j}]" ]) elemType
                [ { inherit (def) file; value = x; } ];
              in optional r.isDefined r.value)
            def.value))
          defs);
        nestedTypes.elemType = elemType;
      };
      attrsOf = elemType: mkOptionType {
        name = "attrsOf"; description = "attribute set of ${elemType.description}";
        check = x: isAttrs x && !(x ? _type);
        merge = loc: defs:
          let
            names = uniqueStrings (concatMap (d: attrNames d.value) defs);
            merged = genAttrs names (n: mergeDefinitions (loc ++ [ n ]) elemType
              (concatMap (d: if d.value ? ${n} then [ { inherit (d) file; value = d.value.${n}; } ] else [ ]) defs));
          in mapAttrs (_: r: r.value) (filterAttrs (_: r: r.isDefined) merged);
        nestedTypes.elemType = elemType;
      };
      either = t1: t2: mkOptionType {
        name = "either"; description = "${t1.description} or ${t2.description}";
        check = x: t1.check x || t2.check x;
        merge = loc: defs:
          if all (d: t1.check d.value) defs then t1.merge loc defs
          else if all (d: t2.check d.value) defs then t2.merge loc defs
          else mergeOneOption loc defs;
      };
      oneOf = ts: foldl' either (head ts) (tail ts);
      functionTo = resultType: mkOptionType {
        name = "functionTo"; description = "function that evaluates to a(n) ${resultType.description}";
        check = isFunction; merge = mergeOneOption;  # the result's type is NOT checked here
      };
      attrs = mkOptionType {
        name = "attrs"; description = "attribute set"; check = isAttrs;
        merge = _loc: defs: foldl' (a: d: a // d.value) { } defs;
      };
      deferredModule = mkOptionType {
        name = "deferredModule"; description = "module";
        check = x: isAttrs x || isFunction x || isPath x;
        merge = _loc: defs: { imports = map (d: { _file = d.file; imports = [ d.value ]; }) defs; };
      };
      submoduleWith = { modules, specialArgs ? { }, shorthandOnlyDefinesConfig ? false }: mkOptionType {
        name = "submodule"; description = "submodule";
        check = x: isAttrs x || isFunction x || isPath x;
        merge = loc: defs: (evalModules {
          modules = modules ++ map (d: { _file = d.file; imports = [ d.value ]; }) defs;
          specialArgs = specialArgs // { name = lib.last loc; };
          prefix = loc;
        }).config;
      };
      submodule = modules: submoduleWith { modules = toList modules; };
    };
  };
in
lib
