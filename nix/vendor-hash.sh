#!/usr/bin/env bash
# Print the vendorHash that buildGoModule's fixed-output derivation will produce for
# the package's own source: the NAR hash (`nix hash path`) of the vendor/ directory
# that `go mod vendor` makes from exactly the store path the package builds from.
# Prints `null` when the module has no dependencies to vendor (buildGoModule then
# wants `vendorHash = null;`). Used by nix/ci-check.sh and nix/update-vendor-hash.sh.
#
#   bash nix/vendor-hash.sh             print the hash
#   bash nix/vendor-hash.sh --keep DIR  also leave that source, with its vendor/, at DIR
#                                       (must not exist): what buildGoModule's build and
#                                       checkPhase run in (nix/ci-check.sh's checkphase)
#
# The source path is found by evaluating the flake with the stand-in nixpkgs
# (nix/stand-in), whose lib.cleanSourceWith is builtins.path like nixpkgs', so it
# is the same store path a real build uses. Flakes see only git-tracked files:
# `git add` new Go files first.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
SYSTEM=${NIX_SYSTEM:-x86_64-linux}
NIX=(nix --extra-experimental-features 'nix-command flakes')
keep=""
case "${1:-}" in
  "") ;;
  --keep) keep=${2:?--keep needs a directory}
          [ ! -e "$keep" ] || { echo "vendor-hash: $keep exists" >&2; exit 1; } ;;
  *) echo "vendor-hash: unknown argument $1" >&2; exit 1 ;;
esac

src=$("${NIX[@]}" eval --raw --no-write-lock-file \
  --override-input nixpkgs "path:$ROOT/nix/stand-in" \
  ".#packages.$SYSTEM.default.src.outPath" 2>"${TMPDIR:-/tmp}/spool-vendor-eval.$$") || {
  cat "${TMPDIR:-/tmp}/spool-vendor-eval.$$" >&2; rm -f "${TMPDIR:-/tmp}/spool-vendor-eval.$$"
  echo "vendor-hash: cannot evaluate the package's source (see above)" >&2; exit 1; }
rm -f "${TMPDIR:-/tmp}/spool-vendor-eval.$$"

work=$(mktemp -d)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"
if [ -e "$work/src/vendor" ]; then
  echo "vendor-hash: the package source has a vendor/ directory; remove it from the repo" >&2; exit 1
fi
log="$work/vendor.log"
if ! (cd "$work/src" && GOFLAGS='' GOTOOLCHAIN=local GOWORK=off go mod vendor) >"$log" 2>&1; then
  cat "$log" >&2
  echo "vendor-hash: \`go mod vendor\` failed on the package's source (is go.sum complete? run \`go mod download\` for the modules named above)" >&2
  exit 1
fi
if [ -d "$work/src/vendor" ] && [ -n "$(ls -A "$work/src/vendor")" ]; then
  nix --extra-experimental-features nix-command hash path "$work/src/vendor"
else
  echo null
fi
if [ -n "$keep" ]; then
  mv "$work/src" "$keep"
fi
