# OCI image: `spool node` as entrypoint, data in the /var/lib/spool volume, run as
# an unprivileged user. Extra arguments to `docker run IMAGE …` are passed to
# `spool node` (for example --node-id, --advertise-kafka-addr, --join).
{ lib, dockerTools, spool }:
let
  uid = "65532";
  dataDir = "/var/lib/spool";
in
dockerTools.buildLayeredImage {
  name = "spool";
  tag = spool.version;
  # Puts bin/spool on the image's PATH, so `docker exec … spool members` works.
  contents = [ spool ];
  fakeRootCommands = ''
    mkdir -p .${dataDir} ./tmp
    chown ${uid}:${uid} .${dataDir}
    chmod 0700 .${dataDir}
    chmod 1777 ./tmp
  '';
  config = {
    User = "${uid}:${uid}";
    Entrypoint = [ (lib.getExe spool) "node" ];
    # Inside a container the listeners must bind all interfaces; each is a
    # SPOOL_* variable, so `docker run -e` or a flag overrides it.
    Env = [
      "SPOOL_DATA_DIR=${dataDir}"
      "SPOOL_KAFKA_ADDR=0.0.0.0:9092"
      "SPOOL_GOSSIP_ADDR=0.0.0.0:7946"
      "SPOOL_ADMIN_ADDR=0.0.0.0:9644"
      "SPOOL_LOG_FORMAT=json"
    ];
    ExposedPorts = {
      "9092/tcp" = { };
      "9644/tcp" = { };
      "7946/tcp" = { };
      "7946/udp" = { };
    };
    Volumes = { ${dataDir} = { }; };
    WorkingDir = dataDir;
    # `spool node` leaves the gossip cluster gracefully on SIGTERM (docker stop).
    StopSignal = "SIGTERM";
    Labels = {
      "org.opencontainers.image.title" = "spool";
      "org.opencontainers.image.version" = spool.version;
      "org.opencontainers.image.source" = "https://github.com/spool-log/spool";
    };
  };
}
