#!/usr/bin/env bash
# bench-before-after.sh: produce and fetch throughput of one Spool node built
# at an older commit (BEFORE) against one built from this tree, in one
# session, runs alternating (before, after, before, after, ...) so that a
# busy or quiet spell of the machine falls on both. Both nodes are driven by
# this tree's `spool bench` (the same client), single copy, page-cache
# durability (--flush-policy os), as scripts/bench-compare.sh runs them.
#
#   scripts/bench-before-after.sh                  # BEFORE=1632662, 3 runs of 10 s
#   BEFORE=<commit> RUNS=5 DURATION=10s scripts/bench-before-after.sh
#
# Prints each run's figures and the medians' ratios (after / before).
set -euo pipefail

BEFORE=${BEFORE:-1632662}
RUNS=${RUNS:-3}
DURATION=${DURATION:-10s}
PRODUCERS=${PRODUCERS:-4}

for tool in go jq python3; do
	command -v "$tool" >/dev/null || { echo "bench-before-after: $tool is required" >&2; exit 1; }
done

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/spool-before-after.XXXXXX")
node_pid=""
cleanup() {
	[[ -z "$node_pid" ]] || { kill "$node_pid" 2>/dev/null && wait "$node_pid" 2>/dev/null || true; }
	git -C "$repo" worktree remove --force "$work/before-src" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

echo "bench-before-after: building $BEFORE and this tree in $work" >&2
git -C "$repo" worktree add --detach "$work/before-src" "$BEFORE" >/dev/null 2>&1
(cd "$work/before-src" && go build -o "$work/spool-before" ./cmd/spool)
(cd "$repo" && go build -o "$work/spool-after" ./cmd/spool)
client="$work/spool-after"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

for run in $(seq 1 "$RUNS"); do
	for side in before after; do
		d="$work/$side-$run"
		mkdir -p "$d"
		kport=$(free_port); aport=$(free_port)
		"$work/spool-$side" node --data-dir "$d/data" --kafka-addr "127.0.0.1:$kport" --admin-addr "127.0.0.1:$aport" \
			--gossip-addr 127.0.0.1:0 --flush-policy os --log-level warn >"$d/node.log" 2>&1 &
		node_pid=$!
		deadline=$((SECONDS + 60))
		until "$client" topic list --brokers "127.0.0.1:$kport" --timeout 1s >/dev/null 2>&1; do
			((SECONDS < deadline)) || { echo "bench-before-after: $side node does not answer" >&2; cat "$d/node.log" >&2; exit 1; }
			sleep 0.2
		done
		sync
		"$client" bench produce --brokers "127.0.0.1:$kport" --topic p1k --partitions "$PRODUCERS" --producers "$PRODUCERS" \
			--record-size 1024 --acks 1 --duration "$DURATION" -o json -q >"$d/produce.json"
		"$client" bench consume --brokers "127.0.0.1:$kport" --topic p1k --duration "$DURATION" -o json -q >"$d/consume.json"
		kill "$node_pid"; wait "$node_pid" 2>/dev/null || true
		node_pid=""
		rm -rf "$d/data"
		echo "run $run $side: produce $(jq -r '.results[0].mb_per_sec' "$d/produce.json") MB/s, consume $(jq -r '.results[0].mb_per_sec' "$d/consume.json") MB/s" >&2
	done
done

python3 - "$work" "$RUNS" <<'EOF'
import json, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
def mbps(side, what):
    return [json.load(open(f"{work}/{side}-{i}/{what}.json"))["results"][0]["mb_per_sec"] for i in range(1, runs + 1)]
print("| 1 KiB records, 4 producers, acks=1 | before (median) | after (median) | after / before | runs before | runs after |")
print("|---|---|---|---|---|---|")
for what in ("produce", "consume"):
    b, a = mbps("before", what), mbps("after", what)
    mb, ma = statistics.median(b), statistics.median(a)
    print(f"| {what} MB/s | {mb:.0f} | {ma:.0f} | {ma / mb:.2f}× | {' '.join(f'{x:.0f}' for x in b)} | {' '.join(f'{x:.0f}' for x in a)} |")
EOF
