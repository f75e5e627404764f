#!/usr/bin/env bash
# fuzz-smoke.sh runs every Go fuzz target in the module briefly, one at a
# time (go test -fuzz takes one target per run), so a decoder that panics
# on bytes a short fuzz finds fails CI. Each target's seed corpus already
# runs as an ordinary test in `go test`; this adds FUZZTIME of mutation.
#
# Targets are found with `go test -list`, so a new Fuzz function is picked
# up without editing this script.
#
#   scripts/fuzz-smoke.sh              # every package, 5s per target
#   FUZZTIME=30s scripts/fuzz-smoke.sh ./node/...
set -euo pipefail
cd "$(dirname "$0")/.."

fuzztime=${FUZZTIME:-5s}
pkgs=("$@")
if [ ${#pkgs[@]} -eq 0 ]; then
	pkgs=(./...)
fi

ran=0
failed=()
for pkg in $(go list "${pkgs[@]}"); do
	# -list prints the matching names, then "ok <pkg>"; skip packages
	# without test files.
	targets=$(go test -list '^Fuzz' "$pkg" 2>/dev/null | grep '^Fuzz' || true)
	for target in $targets; do
		echo "== $pkg $target ($fuzztime)"
		if ! go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg"; then
			failed+=("$pkg $target")
		fi
		ran=$((ran + 1))
	done
done

if [ "$ran" -eq 0 ]; then
	echo "fuzz-smoke: no fuzz targets found" >&2
	exit 1
fi
if [ ${#failed[@]} -gt 0 ]; then
	echo "fuzz-smoke: ${#failed[@]} of $ran targets failed:" >&2
	printf '  %s\n' "${failed[@]}" >&2
	echo "(a failing input is saved under the package's testdata/fuzz/<target>/; commit it to keep it as a regression seed)" >&2
	exit 1
fi
echo "fuzz-smoke: $ran targets passed"
