# checks.<system>.cluster: three NixOS machines run services.spool, find one another
# by gossip, and serve one topic; one machine stops and the others see it leave.
# Run it with `nix flake check` or `nix build .#checks.x86_64-linux.cluster`
# (needs KVM and network to the Nix cache; CI here only evaluates it and lints the
# script below with pyflakes).
{ self }:
let
  nodeIds = { spool1 = 1; spool2 = 2; spool3 = 3; };
  keyFile = "/run/keys/spool-gossip-key";

  node = name: id: { config, lib, ... }: {
    imports = [ self.nixosModules.default ];
    services.spool = {
      enable = true;
      nodeId = id;
      # An IP, not a name: gossip advertises addresses, and the test network
      # gives each machine 192.168.1.N.
      advertisedAddress = config.networking.primaryIPAddress;
      join = map (peer: "${peer}:7946") (builtins.filter (peer: peer != name) (builtins.attrNames nodeIds));
      rack = "rack-${toString id}";
      gossipKeyFile = keyFile;
      openFirewall = true;
      logLevel = "debug";
      settings.flush-policy = "every-append";
    };
    # The gossip key is written at run time by the test script, as a secrets
    # manager would, so the service is started by the script rather than at boot.
    systemd.services.spool.wantedBy = lib.mkForce [ ];
    virtualisation.memorySize = 1024;
    virtualisation.cores = 2;
  };
in
{
  name = "spool-cluster";
  nodes = builtins.mapAttrs node nodeIds;

  testScript = ''
    # A throwaway key for this test only; real keys never go into Nix files.
    GOSSIP_KEY = "FW7RVHGukuUljBDO2byJonSblgFhXsTF25K/nDDx0fM="
    KEY_FILE = "${keyFile}"
    ADMIN = "--admin 127.0.0.1:9644"
    servers = [spool1, spool2, spool3]


    def alive_count(expected):
        return (
            f"test \"$(spool members {ADMIN} | grep -cw alive)\" -eq {expected}"
        )


    start_all()
    for m in servers:
        m.wait_for_unit("multi-user.target")
        m.succeed(
            "install -d -m 0700 /run/keys",
            f"printf %s {GOSSIP_KEY} > {KEY_FILE}",
            f"chmod 0400 {KEY_FILE}",
            "systemctl start spool.service",
        )
    for m in servers:
        m.wait_for_unit("spool.service")
        m.wait_for_open_port(9092)

    with subtest("every node sees three alive members"):
        for m in servers:
            m.wait_until_succeeds(alive_count(3), timeout=120)
        print(spool1.succeed(f"spool members {ADMIN}"))

    with subtest("peers can reach each node's admin API (anti-entropy)"):
        # Each node advertises its admin API at its own address, not loopback,
        # and peers on the other machines reach it there.
        for m in servers:
            m.succeed(
                f"spool members {ADMIN} -o json | grep -q '\"admin_addr\": \"192.168.1.'"
            )
        spool2.succeed("spool members --admin spool1:9644")

    with subtest("produce on one machine, consume on another"):
        spool1.succeed(
            "spool topic create orders --partitions 3 --replication-factor 3"
            " --brokers spool1:9092"
        )
        spool3.wait_until_succeeds(
            "spool topic list --brokers spool3:9092 | grep -qw orders", timeout=60
        )
        spool1.succeed(
            "printf 'first\nsecond\nthird\n' | spool produce orders --brokers spool1:9092"
        )
        got = spool3.wait_until_succeeds(
            "spool consume orders --from beginning -n 3 --brokers spool3:9092"
            " --timeout 20s | sort",
            timeout=90,
        )
        assert got.split() == ["first", "second", "third"], f"consumed {got!r}"

    with subtest("a stopped node is seen to leave"):
        spool3.succeed("systemctl stop spool.service")
        for m in (spool1, spool2):
            m.wait_until_succeeds(alive_count(2), timeout=120)
            m.wait_until_succeeds(f"spool members {ADMIN} | grep -w left", timeout=60)
        print(spool1.succeed(f"spool members {ADMIN}"))
  '';
}
