# NixOS module: services.spool runs one Spool node (`spool node`) as a hardened
# systemd service. Three machines with this module, each with its own nodeId and
# `join` pointing at the others, form a cluster (see nix/test.nix).
#
# The gossip key is given as a FILE path (gossipKeyFile), read by systemd at start
# with LoadCredential=, so it never enters the Nix store and the service's dynamic
# user can read it without owning it.
{ self }:
{ config, lib, pkgs, utils, ... }:
let
  cfg = config.services.spool;
  inherit (lib) mkOption mkIf types;

  # host:port, with IPv6 literals bracketed.
  hostPort = host: port:
    if lib.hasInfix ":" host then "[${host}]:${toString port}" else "${host}:${toString port}";

  # A path to a secret: absolute, given as a string (a Nix path value would be
  # copied into the world-readable store), and not already in the store.
  secretPath = types.addCheck types.str
    (s: lib.hasPrefix "/" s && !lib.hasPrefix "${builtins.storeDir}/" s)
    // { description = "absolute path outside the Nix store, as a string (not a Nix path value)"; };

  # An admin API bound to loopback is unreachable for peers: they cannot pull
  # the topic catalog from it (anti-entropy), so nothing is advertised for it
  # and the firewall stays shut.
  isLoopback = host: lib.hasPrefix "127." host || host == "::1" || host == "localhost";
  adminForPeers = !isLoopback cfg.adminListenAddress;

  credentialName = "gossip-key";

  # Secret files handed to the service with LoadCredential= (never copied into
  # the store), each as `--FLAG=%d/NAME`: systemd's credentials directory.
  # Credentials are copied when the service starts, so a renewed certificate
  # takes a restart (a rolling one: /readyz waits for each node), not SIGHUP.
  secretFiles = lib.filterAttrs (_: f: f.path != null) {
    tls-cert = { flag = "tls-cert-file"; path = cfg.tls.certFile; };
    tls-key = { flag = "tls-key-file"; path = cfg.tls.keyFile; };
    tls-client-ca = { flag = "tls-client-ca-file"; path = cfg.tls.clientCAFile; };
    admin-tls-cert = { flag = "admin-tls-cert-file"; path = cfg.adminTls.certFile; };
    admin-tls-key = { flag = "admin-tls-key-file"; path = cfg.adminTls.keyFile; };
    admin-tls-client-ca = { flag = "admin-tls-client-ca-file"; path = cfg.adminTls.clientCAFile; };
    admin-tls-peer-ca = { flag = "admin-tls-peer-ca-file"; path = cfg.adminTls.peerCAFile; };
    sasl-credentials = { flag = "sasl-credentials-file"; path = cfg.sasl.credentialsFile; };
    sasl-bootstrap-password = { flag = "sasl-bootstrap-password-file"; path = cfg.sasl.bootstrapPasswordFile; };
    raft-tls-cert = { flag = "raft-tls-cert-file"; path = cfg.raftTls.certFile; };
    raft-tls-key = { flag = "raft-tls-key-file"; path = cfg.raftTls.keyFile; };
    raft-tls-ca = { flag = "raft-tls-ca-file"; path = cfg.raftTls.caFile; };
    admin-token = { flag = "admin-token-file"; path = cfg.adminTokenFile; };
  };
  secretFlags = lib.concatStrings (lib.mapAttrsToList (name: f: " --${f.flag}=%d/${name}") secretFiles);
  secretCredentials = lib.mapAttrsToList (name: f: "${name}:${f.path}") secretFiles;

  tlsFileOptions = what: {
    certFile = mkOption {
      type = types.nullOr secretPath;
      default = null;
      example = "/run/secrets/spool.crt";
      description = "PEM certificate chain of ${what}, given as a string path (LoadCredential=).";
    };
    keyFile = mkOption {
      type = types.nullOr secretPath;
      default = null;
      example = "/run/secrets/spool.key";
      description = "PEM private key of `certFile`, given as a string path (LoadCredential=).";
    };
    clientCAFile = mkOption {
      type = types.nullOr secretPath;
      default = null;
      example = "/run/secrets/clients-ca.crt";
      description = "PEM CAs that client certificates of ${what} must chain to: set, every client must present one (mTLS).";
    };
  };
  privilegedPort = builtins.any (p: p < 1024) [ cfg.kafkaPort cfg.gossipPort cfg.adminPort cfg.raftPort ];

  settingFlags = lib.concatLists (lib.mapAttrsToList
    (name: value: lib.optional (value != null) "--${name}=${toString value}")
    cfg.settings);

  args =
    [
      "node"
      "--node-id=${toString cfg.nodeId}"
      "--data-dir=${cfg.dataDir}"
      "--kafka-addr=${hostPort cfg.listenAddress cfg.kafkaPort}"
      "--gossip-addr=${hostPort cfg.listenAddress cfg.gossipPort}"
      "--admin-addr=${hostPort cfg.adminListenAddress cfg.adminPort}"
      "--raft-addr=${hostPort cfg.listenAddress cfg.raftPort}"
      "--log-level=${cfg.logLevel}"
      "--log-format=${cfg.logFormat}"
    ]
    ++ lib.optionals (cfg.advertisedAddress != null) [
      "--advertise-kafka-addr=${hostPort cfg.advertisedAddress cfg.kafkaPort}"
      "--advertise-gossip-addr=${hostPort cfg.advertisedAddress cfg.gossipPort}"
      "--advertise-raft-addr=${hostPort cfg.advertisedAddress cfg.raftPort}"
    ]
    ++ lib.optional (cfg.advertisedAddress != null && adminForPeers)
      "--advertise-admin-addr=${hostPort cfg.advertisedAddress cfg.adminPort}"
    ++ map (peer: "--join=${peer}") cfg.join
    ++ lib.optional (cfg.rack != null) "--rack=${cfg.rack}"
    ++ lib.optional (cfg.kafkaSecurityProtocol != "PLAINTEXT") "--kafka-security-protocol=${cfg.kafkaSecurityProtocol}"
    ++ lib.optional (lib.hasPrefix "SASL_" cfg.kafkaSecurityProtocol) "--sasl-mechanisms=${lib.concatStringsSep "," cfg.sasl.mechanisms}"
    ++ lib.optional (cfg.sasl.bootstrapUser != null) "--sasl-bootstrap-user=${cfg.sasl.bootstrapUser}"
    ++ lib.optional cfg.adminTokenForReads "--admin-token-for-reads"
    ++ lib.optional (cfg.acl.superUsers != [ ]) "--super-users=${lib.concatStringsSep ";" cfg.acl.superUsers}"
    ++ lib.optional cfg.acl.allowEveryoneIfNoAclFound "--allow-everyone-if-no-acl-found"
    ++ settingFlags
    ++ cfg.extraFlags;
in
{
  options.services.spool = {
    enable = lib.mkEnableOption "Spool, a distributed log that speaks the Kafka protocol";

    package = mkOption {
      type = types.package;
      default = self.packages.${pkgs.stdenv.hostPlatform.system}.default;
      defaultText = lib.literalExpression "spool.packages.\${system}.default";
      description = "The Spool package; its `spool` binary runs the node and is put on PATH for the CLI.";
    };

    nodeId = mkOption {
      type = types.ints.between 0 2147483647;
      example = 1;
      description = "Broker id (int32), unique in the cluster and never reused for another machine.";
    };

    dataDir = mkOption {
      type = types.strMatching "/var/lib/[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*";
      default = "/var/lib/spool";
      description = ''
        Where the node keeps its partitions and state. It is systemd's StateDirectory
        (the service runs with DynamicUser), so it must lie under /var/lib.
      '';
    };

    listenAddress = mkOption {
      type = types.str;
      default = "0.0.0.0";
      example = "::";
      description = "Address the Kafka and gossip listeners bind.";
    };

    advertisedAddress = mkOption {
      type = types.nullOr types.str;
      default = null;
      example = "spool-1.internal";
      description = ''
        Host name or IP that clients and other nodes use to reach this node; it is
        advertised with the Kafka and gossip ports. Null lets Spool use the bound
        addresses, which is wrong when listening on 0.0.0.0 in a real cluster.
      '';
    };

    kafkaPort = mkOption { type = types.port; default = 9092; description = "Kafka protocol port."; };
    gossipPort = mkOption { type = types.port; default = 7946; description = "Serf gossip port (TCP and UDP)."; };
    adminPort = mkOption { type = types.port; default = 9644; description = "Admin HTTP API port (metrics, members)."; };
    raftPort = mkOption {
      type = types.port;
      default = 9645;
      description = "Replication (Raft) transport port (TCP), on `listenAddress`; peers must reach it for replicated partitions. A fixed port, so the firewall can open it (the binary alone picks a free one).";
    };

    adminListenAddress = mkOption {
      type = types.str;
      default = cfg.listenAddress;
      defaultText = lib.literalExpression "config.services.spool.listenAddress";
      example = "127.0.0.1";
      description = ''
        Address the admin HTTP API (metrics, health, members, placement,
        decommission; Go's pprof only if `extraFlags` has `--enable-pprof`) binds. Peers pull the topic catalog and roster from it
        (anti-entropy, which repairs lost gossip), at `advertisedAddress` with
        `adminPort`, so by default it listens where Kafka and gossip do.

        It is unauthenticated, like the Kafka port: whoever reaches it can read
        metrics (and profiles, with `--enable-pprof`) and decommission a stopped broker. Keep it on a trusted
        cluster network (restrict the port with `networking.firewall.interfaces` or an
        external firewall rather than `openFirewall` when other hosts share the
        network). On loopback it is safe from the network, but peers cannot reach it:
        topics then spread by gossip events only, and a node that missed one (it was
        down, a packet was lost) never learns of it;
        the node warns about this at start.
      '';
    };

    join = mkOption {
      type = types.listOf (types.strMatching "[^[:space:]]+:[0-9]+");
      default = [ ];
      example = [ "spool-1.internal:7946" "spool-2.internal:7946" ];
      description = "Gossip addresses (host:port) of peers to join at start. Listing every other node is fine.";
    };

    rack = mkOption {
      type = types.nullOr types.nonEmptyStr;
      default = null;
      example = "eu-west-1a";
      description = "Rack (failure domain) reported to clients and used for placement.";
    };

    gossipKeyFile = mkOption {
      type = types.nullOr secretPath;
      default = null;
      example = "/run/secrets/spool-gossip-key";
      description = ''
        File holding the gossip encryption key, base64 of 32 random bytes
        (`head -c32 /dev/urandom | base64`), the same on every node. Read by systemd (LoadCredential=) when the service starts; it
        is never copied into the Nix store. Give it as a string, not a Nix path.
      '';
    };

    openFirewall = mkOption {
      type = types.bool;
      default = false;
      description = ''
        Open the Kafka port (TCP), the gossip port (TCP and UDP) and, unless
        `adminListenAddress` is loopback, the admin port (TCP), which peers pull the
        topic catalog from. Each is opened to every source; see
        `adminListenAddress` before opening the admin port on a shared network.
      '';
    };

    logLevel = mkOption {
      type = types.enum [ "trace" "debug" "info" "warn" "error" ];
      default = "info";
      description = "Log level.";
    };

    logFormat = mkOption {
      type = types.enum [ "text" "json" ];
      default = "json";
      description = "Log format; journald keeps either.";
    };

    kafkaSecurityProtocol = mkOption {
      type = types.enum [ "PLAINTEXT" "SSL" "SASL_PLAINTEXT" "SASL_SSL" ];
      default = "PLAINTEXT";
      description = ''
        Security protocol of the Kafka listener, as Kafka names them: SSL needs
        `tls.certFile` and `tls.keyFile`; SASL_* needs `sasl.credentialsFile` or a
        bootstrap user. More listeners: `extraFlags` with `--listener`.
      '';
    };

    tls = tlsFileOptions "the Kafka listener";

    adminTls = tlsFileOptions "the admin API, which then serves HTTPS only (every node of the cluster must use it, as peers pull from each other)" // {
      peerCAFile = mkOption {
        type = types.nullOr secretPath;
        default = null;
        example = "/run/secrets/spool-admin-ca.crt";
        description = "PEM CAs the peers' admin certificates chain to, which this node checks when it pulls from them; default `clientCAFile`, else the system's roots (a private CA without admin mTLS needs this).";
      };
    };

    raftTls = {
      certFile = mkOption {
        type = types.nullOr secretPath;
        default = null;
        example = "/run/secrets/spool-raft.crt";
        description = "PEM certificate of the Raft replication transport, which then speaks mutual TLS only (server and client usage, naming the advertised host); every node must use it.";
      };
      keyFile = mkOption {
        type = types.nullOr secretPath;
        default = null;
        example = "/run/secrets/spool-raft.key";
        description = "PEM private key of `raftTls.certFile`.";
      };
      caFile = mkOption {
        type = types.nullOr secretPath;
        default = null;
        example = "/run/secrets/spool-raft-ca.crt";
        description = "PEM CAs peers' Raft certificates must chain to, both ways.";
      };
    };

    adminTokenFile = mkOption {
      type = types.nullOr secretPath;
      default = null;
      example = "/run/secrets/spool-admin-token";
      description = ''
        File holding the bearer token the admin API's state changes (decommission,
        quarantine purge, scrub) require, unless a verified client certificate
        (adminTls.clientCAFile); the same on every node, which present it to each other.
        Without it and without admin mTLS the admin API is open to whoever reaches it.
      '';
    };

    adminTokenForReads = mkOption {
      type = types.bool;
      default = false;
      description = "Require `adminTokenFile`'s token for the admin API's reads too (/healthz and /readyz stay open).";
    };

    sasl = {
      mechanisms = mkOption {
        type = types.listOf (types.enum [ "PLAIN" "SCRAM-SHA-256" "SCRAM-SHA-512" ]);
        default = [ "SCRAM-SHA-256" "SCRAM-SHA-512" ];
        description = "SASL mechanisms the SASL_* listeners offer.";
      };
      credentialsFile = mkOption {
        type = types.nullOr secretPath;
        default = null;
        example = "/run/secrets/spool-scram";
        description = "SCRAM credentials, one per line as `spool user hash` prints them (salted and hashed), the same on every node.";
      };
      bootstrapUser = mkOption {
        type = types.nullOr types.nonEmptyStr;
        default = null;
        example = "admin";
        description = "A user given SCRAM credentials at start from `bootstrapPasswordFile`.";
      };
      bootstrapPasswordFile = mkOption {
        type = types.nullOr secretPath;
        default = null;
        example = "/run/secrets/spool-admin-password";
        description = "File holding `bootstrapUser`'s password (LoadCredential=).";
      };
    };

    acl = {
      superUsers = mkOption {
        type = types.listOf (types.strMatching "[^:;]+:[^;]+");
        default = [ ];
        example = [ "User:admin" "User:CN=ops,O=acme" ];
        description = "Principals allowed every request whatever the ACLs say (Kafka's super.users): User:NAME for a SASL user, User:CN=... for a client certificate's subject.";
      };
      allowEveryoneIfNoAclFound = mkOption {
        type = types.bool;
        default = false;
        description = "Once the cluster has ACLs, allow a request on a resource no ACL matches (Kafka's allow.everyone.if.no.acl.found). false (the default, as Kafka's): no matching ACL means deny, for everyone but `acl.superUsers`; set the super users before the first ACL. A cluster with no ACL at all serves everyone either way.";
      };
    };

    settings = mkOption {
      description = ''
        Broker-wide defaults, each passed as `--NAME=VALUE` to `spool node` when not
        null. A topic's own configs (retention.ms, ...) override them.
      '';
      default = { };
      example = { retention-ms = 7 * 24 * 3600 * 1000; segment-bytes = 256 * 1024 * 1024; };
      type = types.submodule {
        options = {
          retention-ms = mkOption {
            type = types.nullOr types.int;
            default = null;
            description = "Default retention.ms: how long records are kept; -1 keeps them forever.";
          };
          retention-bytes = mkOption {
            type = types.nullOr types.int;
            default = null;
            description = "Default retention.bytes per partition; -1 means unbounded.";
          };
          segment-bytes = mkOption {
            type = types.nullOr types.ints.positive;
            default = null;
            description = "Default segment.bytes: size at which a partition rolls to a new segment file.";
          };
          flush-policy = mkOption {
            type = types.nullOr (types.enum [ "every-append" "interval" "os" ]);
            default = null;
            description = "When appends are fsynced.";
          };
        };
      };
    };

    extraFlags = mkOption {
      type = types.listOf types.str;
      default = [ ];
      example = [ "--auto-create-topics=false" ];
      description = "More flags for `spool node`, appended last.";
    };
  };

  config = mkIf cfg.enable {
    assertions = [
      {
        assertion = let ports = [ cfg.kafkaPort cfg.gossipPort cfg.adminPort cfg.raftPort ]; in builtins.all (p: builtins.length (builtins.filter (q: q == p) ports) == 1) ports;
        message = "services.spool: kafkaPort, gossipPort, adminPort and raftPort must differ.";
      }
      {
        assertion = !(lib.elem cfg.kafkaSecurityProtocol [ "SSL" "SASL_SSL" ]) || (cfg.tls.certFile != null && cfg.tls.keyFile != null);
        message = "services.spool: kafkaSecurityProtocol ${cfg.kafkaSecurityProtocol} needs tls.certFile and tls.keyFile.";
      }
      {
        assertion = !(lib.hasPrefix "SASL_" cfg.kafkaSecurityProtocol) || cfg.sasl.credentialsFile != null || cfg.sasl.bootstrapUser != null;
        message = "services.spool: a SASL_* kafkaSecurityProtocol needs sasl.credentialsFile or sasl.bootstrapUser.";
      }
      {
        assertion = (cfg.sasl.bootstrapUser == null) == (cfg.sasl.bootstrapPasswordFile == null);
        message = "services.spool: sasl.bootstrapUser and sasl.bootstrapPasswordFile go together.";
      }
      {
        assertion = !cfg.adminTokenForReads || cfg.adminTokenFile != null;
        message = "services.spool: adminTokenForReads needs adminTokenFile.";
      }
      {
        assertion = (cfg.raftTls.certFile == null) == (cfg.raftTls.keyFile == null) && (cfg.raftTls.certFile == null) == (cfg.raftTls.caFile == null);
        message = "services.spool: raftTls.certFile, keyFile and caFile go together.";
      }
      {
        assertion = (cfg.adminTls.certFile == null) == (cfg.adminTls.keyFile == null);
        message = "services.spool: adminTls.certFile and adminTls.keyFile go together.";
      }
      {
        assertion = cfg.adminTls.peerCAFile == null || cfg.adminTls.certFile != null;
        message = "services.spool: adminTls.peerCAFile checks peers' HTTPS admin APIs, which need adminTls.certFile on every node.";
      }
    ];

    environment.systemPackages = [ cfg.package ];

    networking.firewall = mkIf cfg.openFirewall {
      allowedTCPPorts = [ cfg.kafkaPort cfg.gossipPort cfg.raftPort ] ++ lib.optional adminForPeers cfg.adminPort;
      allowedUDPPorts = [ cfg.gossipPort ];
    };

    systemd.services.spool = {
      description = "Spool node ${toString cfg.nodeId}";
      wantedBy = [ "multi-user.target" ];
      wants = [ "network-online.target" ];
      after = [ "network-online.target" ];
      serviceConfig = {
        # %d is systemd's credentials directory; it is appended unescaped because
        # escapeSystemdExecArgs would turn the % into %%.
        ExecStart = utils.escapeSystemdExecArgs ([ (lib.getExe cfg.package) ] ++ args)
          + lib.optionalString (cfg.gossipKeyFile != null) " --gossip-key-file=%d/${credentialName}"
          + secretFlags;
        LoadCredential = lib.optional (cfg.gossipKeyFile != null) "${credentialName}:${cfg.gossipKeyFile}"
          ++ secretCredentials;

        # SIGTERM makes `spool node` leave the gossip cluster gracefully before exiting.
        KillSignal = "SIGTERM";
        KillMode = "mixed";
        TimeoutStopSec = "45s";
        Restart = "on-failure";
        RestartSec = "2s";
        # `spool node` exits 78 when the cluster refused it (a live member has its
        # node id or name): a restart would be refused again, so it is not retried.
        RestartPreventExitStatus = 78;

        DynamicUser = true;
        StateDirectory = lib.removePrefix "/var/lib/" cfg.dataDir;
        StateDirectoryMode = "0700";
        WorkingDirectory = cfg.dataDir;
        UMask = "0077";
        LimitNOFILE = 1048576;

        NoNewPrivileges = true;
        ProtectSystem = "strict";
        ProtectHome = true;
        PrivateTmp = true;
        PrivateDevices = true;
        PrivateUsers = !privilegedPort;
        ProtectClock = true;
        ProtectHostname = true;
        ProtectKernelLogs = true;
        ProtectKernelModules = true;
        ProtectKernelTunables = true;
        ProtectControlGroups = true;
        ProtectProc = "invisible";
        ProcSubset = "pid";
        RestrictAddressFamilies = [ "AF_INET" "AF_INET6" "AF_UNIX" "AF_NETLINK" ];
        RestrictNamespaces = true;
        RestrictRealtime = true;
        RestrictSUIDSGID = true;
        LockPersonality = true;
        MemoryDenyWriteExecute = true;
        RemoveIPC = true;
        SystemCallArchitectures = "native";
        SystemCallFilter = [ "@system-service" "~@privileged" ];
        CapabilityBoundingSet = if privilegedPort then "CAP_NET_BIND_SERVICE" else "";
        AmbientCapabilities = if privilegedPort then "CAP_NET_BIND_SERVICE" else "";
      };
    };
  };
}
