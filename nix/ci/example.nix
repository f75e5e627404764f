# A NixOS configuration that sets every services.spool option, so that CI
# (nix/ci-check.sh, via eval-example.nix) evaluates all of the module's code paths,
# not only those the cluster test uses. It is also a reference for operators.
{ ... }:
{
  services.spool = {
    enable = true;
    nodeId = 7;
    dataDir = "/var/lib/spool-a";
    listenAddress = "::";
    advertisedAddress = "fd00::7";
    kafkaPort = 19092;
    gossipPort = 17946;
    adminPort = 19644;
    raftPort = 19645;
    adminListenAddress = "::1";
    join = [ "spool-1.internal:17946" "[fd00::2]:17946" ];
    rack = "eu-west-1a";
    gossipKeyFile = "/run/secrets/spool-gossip-key";
    kafkaSecurityProtocol = "SASL_SSL";
    tls = {
      certFile = "/run/secrets/spool.crt";
      keyFile = "/run/secrets/spool.key";
      clientCAFile = "/run/secrets/clients-ca.crt";
    };
    adminTls = {
      certFile = "/run/secrets/spool-admin.crt";
      keyFile = "/run/secrets/spool-admin.key";
      clientCAFile = "/run/secrets/admin-ca.crt";
      peerCAFile = "/run/secrets/admin-peers-ca.crt";
    };
    raftTls = {
      certFile = "/run/secrets/spool-raft.crt";
      keyFile = "/run/secrets/spool-raft.key";
      caFile = "/run/secrets/spool-raft-ca.crt";
    };
    adminTokenFile = "/run/secrets/spool-admin-token";
    adminTokenForReads = true;
    acl = {
      superUsers = [ "User:admin" "User:CN=ops,O=acme" ];
      allowEveryoneIfNoAclFound = true;
    };
    sasl = {
      mechanisms = [ "SCRAM-SHA-512" ];
      credentialsFile = "/run/secrets/spool-scram";
      bootstrapUser = "admin";
      bootstrapPasswordFile = "/run/secrets/spool-admin-password";
    };
    openFirewall = true;
    logLevel = "warn";
    logFormat = "text";
    settings = {
      retention-ms = 7 * 24 * 3600 * 1000;
      retention-bytes = -1;
      segment-bytes = 256 * 1024 * 1024;
      flush-policy = "interval";
    };
    extraFlags = [ "--auto-create-topics=false" ];
  };
}
