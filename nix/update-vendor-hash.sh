#!/usr/bin/env bash
# Rewrite `vendorHash` in nix/package.nix to match go.mod/go.sum and the Go
# imports of the committed/staged tree. Run after any dependency change
# (`git add` new Go files first: flakes see only git-tracked files).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PKG="$ROOT/nix/package.nix"
pattern='^( *vendorHash = )(null|"sha256-[A-Za-z0-9+/]{43}=");$'
[ "$(grep -Ec "$pattern" "$PKG")" = 1 ] || {
  echo "update-vendor-hash: expected exactly one line \`vendorHash = \"sha256-…\";\` (or null) in nix/package.nix" >&2; exit 1; }
new=$(bash "$ROOT/nix/vendor-hash.sh")
if [ "$new" = null ]; then value=null; else value="\"$new\""; fi
old=$(sed -En "s/$pattern/\\2/p" "$PKG")
if [ "$old" = "$value" ]; then
  echo "vendorHash already up to date: $value"
else
  sed -Ei "s#$pattern#\\1${value//\//\\/};#" "$PKG"
  echo "vendorHash: $old -> $value (nix/package.nix)"
fi
