# `nix develop`: Go (the same as the package builds with) and the tools the
# project's tests use: kcat (librdkafka) and Node.js (kafkajs) for integration/,
# pyflakes for nix/ci-check.sh.
{ mkShell, go, gopls, gotools, golangci-lint, delve, kcat, nodejs, python3Packages }:
mkShell {
  packages = [ go gopls gotools golangci-lint delve kcat nodejs python3Packages.pyflakes ];
  # Never let `go` download a different toolchain than the one Nix provides.
  GOTOOLCHAIN = "local";
}
