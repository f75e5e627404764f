# The smallest configuration of services.spool: what an operator must set and nothing more.
# nix/ci/module-eval.nix evaluates it (with nixpkgs' real module system) beside example.nix
# and the test's machines.
{ ... }:
{
  services.spool = {
    enable = true;
    nodeId = 1;
  };
}
