# checks.<system>.cluster: three NixOS machines run services.spool with everything an
# operator outside one trusted host turns on: SASL_SSL with SCRAM-SHA-512 on the Kafka
# listener, HTTPS and a bearer token on the admin API, mutual TLS on the Raft transport,
# and encrypted gossip. They find one another by gossip, replicate one topic (R=3),
# share SCRAM users cluster-wide, refuse a wrong password and a plaintext client, and
# one machine stops and the others see it leave.
# Run it with `nix flake check` or `nix build .#checks.x86_64-linux.cluster`
# (needs KVM and network to the Nix cache). CI here cannot run it: it evaluates it, evaluates
# the three machines' services.spool with nixpkgs' real module system, checks their units
# with systemd-analyze and their ExecStart with the spool binary, and lints the script
# below with pyflakes (nix/ci-check.sh).
{ self }:
let
  nodeIds = { spool1 = 1; spool2 = 2; spool3 = 3; };
  keys = "/run/keys/spool";

  node = name: id: { config, lib, pkgs, ... }: {
    imports = [ self.nixosModules.default ];
    services.spool = {
      enable = true;
      nodeId = id;
      # An IP, not a name: gossip advertises addresses, and the test network
      # gives each machine 192.168.1.N.
      advertisedAddress = config.networking.primaryIPAddress;
      join = map (peer: "${peer}:7946") (builtins.filter (peer: peer != name) (builtins.attrNames nodeIds));
      rack = "rack-${toString id}";
      gossipKeyFile = "${keys}/gossip-key";
      kafkaSecurityProtocol = "SASL_SSL";
      tls = { certFile = "${keys}/node.crt"; keyFile = "${keys}/node.key"; };
      adminTls = { certFile = "${keys}/node.crt"; keyFile = "${keys}/node.key"; peerCAFile = "${keys}/ca.crt"; };
      raftTls = { certFile = "${keys}/node.crt"; keyFile = "${keys}/node.key"; caFile = "${keys}/ca.crt"; };
      adminTokenFile = "${keys}/admin-token";
      sasl = {
        mechanisms = [ "SCRAM-SHA-512" ];
        bootstrapUser = "admin";
        bootstrapPasswordFile = "${keys}/admin-password";
      };
      openFirewall = true;
      logLevel = "debug";
      settings.flush-policy = "every-append";
    };
    # The certificates, key and passwords are written at run time by the test
    # script, as a secrets manager would, so the service is started by the
    # script rather than at boot.
    systemd.services.spool.wantedBy = lib.mkForce [ ];
    environment.systemPackages = [ pkgs.openssl ];
    virtualisation.memorySize = 1024;
    virtualisation.cores = 2;
  };
in
{
  name = "spool-cluster";
  nodes = builtins.mapAttrs node nodeIds;

  testScript = ''
    # Throwaway secrets for this test only, made when it runs; real ones never go
    # into Nix files or the store.
    GOSSIP_KEY = "FW7RVHGukuUljBDO2byJonSblgFhXsTF25K/nDDx0fM="
    ADMIN_PASSWORD = "admin-test-password"
    ADMIN_TOKEN = "admin-test-token"
    KEYS = "${keys}"
    servers = [spool1, spool2, spool3]
    ids = {"spool1": 1, "spool2": 2, "spool3": 3}

    ADMIN = (
        f"--admin https://127.0.0.1:9644 --tls-ca-file {KEYS}/ca.crt"
        f" --admin-token-file {KEYS}/admin-token"
    )


    def kafka(host, user="admin", password_file=f"{KEYS}/admin-password"):
        return (
            f"--brokers {host}:9092 --tls --tls-ca-file {KEYS}/ca.crt"
            f" --sasl-mechanism SCRAM-SHA-512 --sasl-user {user}"
            f" --sasl-password-file {password_file}"
        )


    def alive_count(expected):
        return (
            f"test \"$(spool members {ADMIN} | grep -cw alive)\" -eq {expected}"
        )


    def put(machine, path, content):
        machine.succeed(
            f"install -d -m 0700 $(dirname {path})",
            f"cat > {path} <<'SECRET'\n{content.strip()}\nSECRET",
            f"chmod 0400 {path}",
        )


    start_all()
    for m in servers:
        m.wait_for_unit("multi-user.target")

    with subtest("a CA and one certificate per node, made on spool1"):
        spool1.succeed(
            "install -d -m 0700 /root/pki",
            "cd /root/pki && openssl req -x509 -newkey ec"
            " -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2"
            " -subj /CN=spool-test-ca -keyout ca.key -out ca.crt",
        )
        for name, i in ids.items():
            spool1.succeed(
                f"cd /root/pki && openssl req -newkey ec"
                f" -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN={name}"
                f" -keyout {name}.key -out {name}.csr",
                f"cd /root/pki && printf '%s\\n' 'subjectAltName=DNS:{name},"
                f"DNS:localhost,IP:192.168.1.{i},IP:127.0.0.1'"
                f" 'extendedKeyUsage=serverAuth,clientAuth' > {name}.ext",
                f"cd /root/pki && openssl x509 -req -in {name}.csr -CA ca.crt"
                f" -CAkey ca.key -CAcreateserial -days 2 -extfile {name}.ext"
                f" -out {name}.crt",
            )
        ca = spool1.succeed("cat /root/pki/ca.crt")
        for m in servers:
            put(m, f"{KEYS}/ca.crt", ca)
            put(m, f"{KEYS}/node.crt", spool1.succeed(f"cat /root/pki/{m.name}.crt"))
            put(m, f"{KEYS}/node.key", spool1.succeed(f"cat /root/pki/{m.name}.key"))
            put(m, f"{KEYS}/gossip-key", GOSSIP_KEY)
            put(m, f"{KEYS}/admin-password", ADMIN_PASSWORD)
            put(m, f"{KEYS}/admin-token", ADMIN_TOKEN)
            m.succeed("systemctl start spool.service")
        for m in servers:
            m.wait_for_unit("spool.service")
            m.wait_for_open_port(9092)

    with subtest("every node sees three alive members over HTTPS"):
        for m in servers:
            m.wait_until_succeeds(alive_count(3), timeout=120)
        print(spool1.succeed(f"spool members {ADMIN}"))

    with subtest("peers can reach each node's admin API (anti-entropy)"):
        # Each node advertises its admin API at its own address, not loopback,
        # and peers on the other machines reach it there, over HTTPS.
        for m in servers:
            m.succeed(
                f"spool members {ADMIN} -o json | grep -q '\"admin_addr\": \"192.168.1.'"
            )
        spool2.succeed(
            f"spool members --admin https://spool1:9644 --tls-ca-file {KEYS}/ca.crt"
            f" --admin-token-file {KEYS}/admin-token"
        )

    with subtest("a user made on one node logs in on another (SCRAM, cluster-wide)"):
        put(spool1, "/root/app-password", "app-test-password")
        put(spool3, "/root/app-password", "app-test-password")
        spool1.succeed(
            f"spool user add app --password-file /root/app-password {kafka('spool1')}"
        )
        spool3.wait_until_succeeds(
            f"spool topic list {kafka('spool3', 'app', '/root/app-password')}",
            timeout=60,
        )

    with subtest("produce on one machine, consume on another (R=3, Raft over mTLS)"):
        spool1.succeed(
            "spool topic create orders --partitions 3 --replication-factor 3"
            f" {kafka('spool1')}"
        )
        spool3.wait_until_succeeds(
            f"spool topic list {kafka('spool3')} | grep -qw orders", timeout=60
        )
        # The CLI produces with acks=all (franz-go's default).
        spool1.succeed(
            f"printf 'first\nsecond\nthird\n' | spool produce orders {kafka('spool1')}"
        )
        got = spool3.wait_until_succeeds(
            f"spool consume orders --from beginning -n 3 {kafka('spool3')}"
            " --timeout 20s | sort",
            timeout=90,
        )
        assert got.split() == ["first", "second", "third"], f"consumed {got!r}"

    with subtest("a wrong password, a plaintext client and no token are refused"):
        put(spool2, "/root/wrong-password", "not-the-password")
        spool2.fail(
            f"spool topic list {kafka('spool1', 'admin', '/root/wrong-password')}"
            " --timeout 10s"
        )
        spool2.fail("spool topic list --brokers spool1:9092 --timeout 10s")
        spool2.fail(
            f"spool decommission 3 --admin https://spool1:9644 --tls-ca-file {KEYS}/ca.crt"
        )
        # ...and the node keeps serving the others.
        spool2.succeed(f"spool topic list {kafka('spool1')} | grep -qw orders")

    with subtest("a stopped node is seen to leave"):
        spool3.succeed("systemctl stop spool.service")
        for m in (spool1, spool2):
            m.wait_until_succeeds(alive_count(2), timeout=120)
            m.wait_until_succeeds(f"spool members {ADMIN} | grep -w left", timeout=60)
        print(spool1.succeed(f"spool members {ADMIN}"))
  '';
}
