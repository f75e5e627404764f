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
#   REPLICAS=3 BEFORE=<commit> scripts/bench-before-after.sh
#
# With REPLICAS=3 each side is three nodes on loopback and the topic has
# three copies; produce is acks=all (franz-go's default, idempotent), which
# is what replication costs, and fetch reads from the leaders.
#
# Prints each run's figures and the medians' ratios (after / before).
set -euo pipefail

BEFORE=${BEFORE:-1632662}
RUNS=${RUNS:-3}
DURATION=${DURATION:-10s}
PRODUCERS=${PRODUCERS:-4}
REPLICAS=${REPLICAS:-1}
case "$REPLICAS" in 1) ACKS=1 ;; 3) ACKS=all ;; *) echo "bench-before-after: REPLICAS is 1 or 3" >&2; exit 1 ;; esac

for tool in go jq python3; do
	command -v "$tool" >/dev/null || { echo "bench-before-after: $tool is required" >&2; exit 1; }
done

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/spool-before-after.XXXXXX")
node_pids=()
stop_nodes() {
	for pid in "${node_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${node_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	node_pids=()
}
cleanup() {
	stop_nodes
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
		brokers="" join=""
		for id in $(seq 1 "$REPLICAS"); do
			kport=$(free_port); aport=$(free_port); gport=$(free_port)
			"$work/spool-$side" node --node-id "$id" --data-dir "$d/data$id" --kafka-addr "127.0.0.1:$kport" --admin-addr "127.0.0.1:$aport" \
				--gossip-addr "127.0.0.1:$gport" ${join:+--join "$join"} --flush-policy os --log-level warn >"$d/node$id.log" 2>&1 &
			node_pids+=($!)
			join=${join:-127.0.0.1:$gport}
			brokers=${brokers:+$brokers,}127.0.0.1:$kport
		done
		deadline=$((SECONDS + 60))
		until "$client" topic create p1k --partitions "$PRODUCERS" -r "$REPLICAS" --brokers "$brokers" --timeout 2s >/dev/null 2>&1; do
			((SECONDS < deadline)) || { echo "bench-before-after: $side cluster does not take the topic" >&2; cat "$d"/node*.log >&2; exit 1; }
			sleep 0.5
		done
		sync
		"$client" bench produce --brokers "$brokers" --topic p1k --partitions "$PRODUCERS" --producers "$PRODUCERS" \
			--record-size 1024 --acks "$ACKS" --duration "$DURATION" -o json -q >"$d/produce.json"
		"$client" bench consume --brokers "$brokers" --topic p1k --duration "$DURATION" -o json -q >"$d/consume.json"
		stop_nodes
		rm -rf "$d"/data*
		echo "run $run $side: produce $(jq -r '.results[0].mb_per_sec' "$d/produce.json") MB/s, consume $(jq -r '.results[0].mb_per_sec' "$d/consume.json") MB/s" >&2
	done
done

python3 - "$work" "$RUNS" "$REPLICAS" "$ACKS" <<'EOF'
import json, statistics, sys
work, runs, replicas, acks = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def mbps(side, what):
    return [json.load(open(f"{work}/{side}-{i}/{what}.json"))["results"][0]["mb_per_sec"] for i in range(1, runs + 1)]
print(f"| 1 KiB records, R={replicas}, acks={acks} | before (median) | after (median) | after / before | runs before | runs after |")
print("|---|---|---|---|---|---|")
for what in ("produce", "consume"):
    b, a = mbps("before", what), mbps("after", what)
    mb, ma = statistics.median(b), statistics.median(a)
    print(f"| {what} MB/s | {mb:.0f} | {ma:.0f} | {ma / mb:.2f}× | {' '.join(f'{x:.0f}' for x in b)} | {' '.join(f'{x:.0f}' for x in a)} |")
EOF
