#!/usr/bin/env bash
# bench-compare.sh runs the whole single-node comparison on this machine and prints
# each figure as a ratio beside its goal, the median of RUNS runs.
#
# Every ratio is measured within one run (the same minutes of a shared,
# noisy machine): the machine baseline (`spool bench baseline`), one Spool
# node (replication factor 1, page-cache durability), and franz-go's kfake
# broker keeping its log on disk, driven by the same `spool bench` load.
#
# The goals are measured with `spool bench ... --raw`: pre-encoded requests
# (fixed batches, a set number of connections and requests in flight),
# because franz-go's own record building and decoding cost as much CPU as
# the broker on a 2-core machine, and a load that is itself the bottleneck
# measures only itself. The append baseline is driven by that same raw
# client, sending the same Produce requests to a server that write(2)s
# each request's batch and answers; so a client's own cost, which on this
# machine is most of a round trip's tail, is on both sides of the ratio.
# The 100 B goal drives Spool and kfake with the same raw load. The
# franz-go figures for the same loads are printed as additional lines.
#
# The baseline's servers run in a process of their own, as the node does:
# a client process and a server process on loopback, measured alike.
#
# The 1 KiB goal's baseline is write(2) of the same batches to
# a file that keeps growing, and the Spool topic keeps everything too. An
# extra line keeps only RETAIN_BYTES (1 GiB) on both sides: the baseline
# deletes its file past --roll-bytes RETAIN_BYTES, so its writes never
# reach the disk at all, while Spool fsyncs every rolled segment in the
# background (as Kafka does, so a restart walks only the active segment);
# that line measures the fsyncs. Its topic's PRODUCERS partitions each
# keep retention.bytes + one segment.bytes (RETAIN_BYTES / PRODUCERS)
# after a retention check, and the node checks every second
# (--retention-check-interval 1s; a node without that flag checks every
# 30 s, which a run does not reach, and the table says so).
#
#   scripts/bench-compare.sh                 # 3 runs of 10 s per figure
#   RUNS=5 DURATION=20s scripts/bench-compare.sh
#   IDLE_PARTITIONS=10000 scripts/bench-compare.sh   # also the 10k-partition figures
#
# Environment: RUNS (3), DURATION (10s), LATENCY_SLICES (3: the latency
# run and its baselines alternate in this many slices), PRODUCERS (4), FETCH_RECORDS
# (2000000 1 KiB records read per sendfile/copy run, from a topic of
# 200000: ten passes), RETAIN_BYTES (1 GiB: what
# the bounded 1 KiB produce and its baseline keep), IDLE_PARTITIONS (0:
# skip), KEEP (1: keep the work directory), OUT (a file for the final table).
set -euo pipefail

RUNS=${RUNS:-3}
DURATION=${DURATION:-10s}
PRODUCERS=${PRODUCERS:-4}
FETCH_RECORDS=${FETCH_RECORDS:-2000000}
IDLE_PARTITIONS=${IDLE_PARTITIONS:-0}
RETAIN_BYTES=${RETAIN_BYTES:-1073741824}
LATENCY_SLICES=${LATENCY_SLICES:-3}

for tool in go jq python3 curl; do
	command -v "$tool" >/dev/null || { echo "bench-compare: $tool is required" >&2; exit 1; }
done

repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/spool-bench-compare.XXXXXX")
pids=()
cleanup() {
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
	done
	[[ "${KEEP:-0}" == 1 ]] || rm -rf "$work"
}
trap cleanup EXIT

echo "bench-compare: building spool (with the kfake subcommand) in $work" >&2
(cd "$repo" && go build -tags benchkfake -o "$work/spool" ./cmd/spool)
spool="$work/spool"

# The 1 KiB topic's partitions: a quarter of each one's share in a segment,
# retention.bytes the other three quarters, so that after a check each
# holds at most its share (retention keeps the newest segments while what
# stays is at least retention.bytes) and the topic at most RETAIN_BYTES.
part_share=$((RETAIN_BYTES / PRODUCERS))
segment_bytes=$((part_share / 4))
retention_bytes=$((part_share - segment_bytes))
# A node enforces retention on a timer; it has to tick within the run.
retention_note=""
if "$spool" node --help 2>&1 | grep -q -- '--retention-check-interval'; then
	node_retention=(--retention-check-interval 1s)
else
	node_retention=()
	retention_note="the node has no --retention-check-interval flag: it checks retention every 30 s, so the bounded 1 KiB topic was not trimmed within a ${DURATION} run"
	echo "bench-compare: warning: $retention_note" >&2
fi

# slice: DURATION (a Go duration: 10s, 1m30s) split into LATENCY_SLICES.
slice=$(python3 -c '
import re, sys
units = {"ms": 0.001, "s": 1, "m": 60, "h": 3600}
parts = re.findall(r"([\d.]+)(ms|s|m|h)", sys.argv[1])
if not parts or "".join(n + u for n, u in parts) != sys.argv[1]:
    sys.exit(f"bench-compare: DURATION {sys.argv[1]!r}: want a duration such as 10s or 1m30s")
print(f"{sum(float(n) * units[u] for n, u in parts) / int(sys.argv[2]):.3f}s")
' "$DURATION" "$LATENCY_SLICES")

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

wait_kafka() { # wait until a broker answers a metadata request
	local addr=$1 deadline=$((SECONDS + 60))
	until "$spool" topic list --brokers "$addr" --timeout 1s >/dev/null 2>&1; do
		((SECONDS < deadline)) || { echo "bench-compare: nothing answers on $addr" >&2; exit 1; }
		sleep 0.2
	done
}

bench() { # bench OUTFILE ARGS...: one spool bench run, JSON to OUTFILE
	local out=$1; shift
	echo "  spool bench $*" >&2
	"$spool" bench "$@" -o json -q >"$out"
}

# fig FILE JQPATH: one number out of a report
fig() { jq -r "$2" "$1"; }

# settle writes back dirty pages, so that every write-heavy measurement
# starts from the same state: once dirty pages pass the kernel's limit a
# writer is throttled to the disk's pace, and otherwise whichever ran
# second would pay for the first one's writes.
settle() { sync; }

for run in $(seq 1 "$RUNS"); do
	echo "bench-compare: run $run of $RUNS" >&2
	r="$work/run$run"
	mkdir -p "$r"

	# One Spool node, as `spool node` runs by default but for its ports.
	kport=$(free_port); aport=$(free_port)
	"$spool" node --data-dir "$r/spool-data" --kafka-addr "127.0.0.1:$kport" --admin-addr "127.0.0.1:$aport" \
		--gossip-addr 127.0.0.1:0 --flush-policy os --log-level warn "${node_retention[@]}" >"$r/node.log" 2>&1 &
	node_pid=$!; pids+=("$node_pid")
	spool_addr="127.0.0.1:$kport"
	wait_kafka "$spool_addr"

	# kfake, one broker, log on disk (no fsync, as Spool's --flush-policy os).
	fport=$(free_port)
	"$spool" bench kfake --addr "127.0.0.1:$fport" --data-dir "$r/kfake-data" >"$r/kfake.log" 2>&1 &
	kfake_pid=$!; pids+=("$kfake_pid")
	kfake_addr="127.0.0.1:$fport"
	wait_kafka "$kfake_addr"

	load=(--producers "$PRODUCERS" --partitions "$PRODUCERS" --acks 1 --duration "$DURATION")

	# 1. produce 1 KiB records, several producers, with franz-go; then the
	#    same batches (as many records as franz-go put in one) pre-encoded,
	#    one request in flight per connection, as the append baseline sends
	#    them; then the baseline, deleting its file past RETAIN_BYTES as the
	#    topic (created here with its retention) deletes its oldest segments.
	"$spool" topic create p1k --brokers "$spool_addr" --partitions "$PRODUCERS" \
		--config "retention.bytes=$retention_bytes" --config "segment.bytes=$segment_bytes" >/dev/null
	settle
	bench "$r/produce1k.json" produce --brokers "$spool_addr" --topic p1k --record-size 1024 "${load[@]}"
	per_batch=$(fig "$r/produce1k.json" '.results[0].extra.records_per_batch // 16 | round | if . < 1 then 1 else . end')
	settle
	bench "$r/produce1k-raw.json" produce --raw --brokers "$spool_addr" --topic p1k --record-size 1024 \
		--batch-records "$per_batch" --max-inflight 1 "${load[@]}"
	settle
	bench "$r/baseline.json" baseline --only append --dir "$r" --duration "$DURATION" --record-size 1024 \
		--batch-records "$per_batch" --producers "$PRODUCERS" --roll-bytes "$RETAIN_BYTES"
	# Both keeping everything they write: the same raw produce into a topic
	# with no retention, and the append never deleting its file (which
	# also puts all producers on one file, where Spool spreads them over
	# partitions).
	settle
	bench "$r/produce1k-keep-raw.json" produce --raw --brokers "$spool_addr" --topic p1k-keep --record-size 1024 \
		--batch-records "$per_batch" --max-inflight 1 "${load[@]}"
	# Its gigabytes go, as the keeping baseline's file goes when it ends:
	# otherwise the baseline would start with that much less free memory
	# and pay for reclaiming it (measured: 330 MB/s here against 1.2 GB/s
	# on its own).
	"$spool" topic delete p1k-keep --brokers "$spool_addr" >/dev/null
	settle
	bench "$r/baseline-keep.json" baseline --only append --dir "$r" --duration "$DURATION" --record-size 1024 \
		--batch-records "$per_batch" --producers "$PRODUCERS" --roll-bytes 1099511627776

	# 2. produce 100 B records: Spool, then kfake, same franz-go load (which
	#    on 2 cores is bound by franz-go's own CPU); then both with the raw
	#    load in franz-go's batch size, which leaves the cores to the broker
	#    under test: that is the goal's figure.
	settle
	bench "$r/produce100-spool.json" produce --brokers "$spool_addr" --topic p100 --record-size 100 "${load[@]}"
	bench "$r/produce100-kfake.json" produce --brokers "$kfake_addr" --topic p100 --record-size 100 "${load[@]}"
	per_batch100=$(fig "$r/produce100-spool.json" '.results[0].extra.records_per_batch // 16 | round | if . < 1 then 1 else . end')
	bench "$r/produce100-spool-raw.json" produce --raw --brokers "$spool_addr" --topic p100 --record-size 100 \
		--batch-records "$per_batch100" --max-inflight 1 "${load[@]}"
	bench "$r/produce100-kfake-raw.json" produce --raw --brokers "$kfake_addr" --topic p100 --record-size 100 \
		--batch-records "$per_batch100" --max-inflight 1 "${load[@]}"

	# 3. consume the 1 KiB records of step 1, just written, so from the page
	#    cache: raw (batches skipped by header, as the copy baseline drops
	#    what it reads), then with franz-go; the copy baseline first. The
	#    gigabytes of step 2 are written back before each, as they would
	#    otherwise be during whichever runs first.
	settle
	bench "$r/baseline-copy.json" baseline --only copy --dir "$r" --duration "$DURATION"
	settle
	bench "$r/consume1k-raw.json" consume --raw --brokers "$spool_addr" --topic p1k --duration "$DURATION"
	bench "$r/consume1k.json" consume --brokers "$spool_addr" --topic p1k --duration "$DURATION"

	# 4. p99 produce latency, acks=1, one record (one request) in flight:
	#    the baseline's append-rtt (one connection appending 1-record
	#    batches) and bare round trip, then the same raw requests to Spool,
	#    alternating in LATENCY_SLICES slices that add up to DURATION a
	#    side, so that a quiet or a busy spell of the machine (they last
	#    seconds here) falls on both; each side's p99 is the median of its
	#    slices'. Then with franz-go.
	for k in $(seq 1 "$LATENCY_SLICES"); do
		settle
		bench "$r/baseline-rtt-$k.json" baseline --only append-rtt,rtt --dir "$r" --duration "$slice" --record-size 1024
		settle
		bench "$r/latency-raw-$k.json" produce --raw --brokers "$spool_addr" --topic lat --record-size 1024 --acks 1 \
			--batch-records 1 --max-inflight 1 --producers 1 --duration "$slice"
	done
	bench "$r/latency.json" produce --brokers "$spool_addr" --topic lat --record-size 1024 --acks 1 \
		--buffered 1 --producers 1 --duration "$DURATION"

	kill "$node_pid" "$kfake_pid"; wait "$node_pid" "$kfake_pid" 2>/dev/null || true
	pids=()

	# 5. fetch with sendfile vs a user-space copy: two `spool node` processes,
	#    --sendfile and --sendfile=false (BenchmarkFetchSendfileVsCopy), read
	#    by `spool bench consume --raw` processes.
	echo "  go test -bench BenchmarkFetchSendfileVsCopy -benchtime ${FETCH_RECORDS}x" >&2
	(cd "$repo" && go test ./integration -run '^$' -bench 'BenchmarkFetchSendfileVsCopy' \
		-benchtime "${FETCH_RECORDS}x" -count 1 -timeout 20m) >"$r/fetch.txt"

	python3 - "$r" "$LATENCY_SLICES" <<'EOF'
import json, re, statistics, sys
r, slices = sys.argv[1], int(sys.argv[2])
def load(name): return json.load(open(f"{r}/{name}.json"))["results"]
def res(name, which=None):
    rs = load(name)
    return rs[0] if which is None else next(x for x in rs if x["name"] == which)
def p99(name, which=None):  # the median over the latency slices
    return statistics.median(res(f"{name}-{k}", which)["latency"]["p99_ms"] for k in range(1, slices + 1))
fetch = {}
for line in open(f"{r}/fetch.txt"):
    m = re.match(r"BenchmarkFetchSendfileVsCopy/(\w+)-\d+\s+\d+\s+\S+ ns/op(.*)", line)
    if m:
        fetch[m.group(1)] = {k: float(v) for v, k in re.findall(r"([\d.e+-]+) (\S+)", m.group(2))}
ratios = {
    "produce_1k_vs_append": res("produce1k-raw")["mb_per_sec"] / res("baseline", "append")["mb_per_sec"],
    "produce_1k_keeping_vs_keeping_append": res("produce1k-keep-raw")["mb_per_sec"] / res("baseline-keep", "append")["mb_per_sec"],
    "produce_100b_vs_kfake": res("produce100-spool")["records_per_sec"] / res("produce100-kfake")["records_per_sec"],
    "consume_1k_vs_copy": res("consume1k-raw")["mb_per_sec"] / res("baseline-copy", "copy")["mb_per_sec"],
    "sendfile_vs_copy_throughput": fetch["sendfile"]["consume_MB/s"] / fetch["copy"]["consume_MB/s"],
    "sendfile_vs_copy_cpu_per_gb": fetch["sendfile"]["server_cpu_s/GB"] / fetch["copy"]["server_cpu_s/GB"],
    "latency_p99_vs_append_rtt_p99": p99("latency-raw") / p99("baseline-rtt", "append-rtt"),
    "latency_p99_vs_rtt_p99": p99("latency-raw") / p99("baseline-rtt", "rtt"),
    "franz_produce_1k_vs_append": res("produce1k")["mb_per_sec"] / res("baseline", "append")["mb_per_sec"],
    "raw_produce_100b_vs_kfake": res("produce100-spool-raw")["records_per_sec"] / res("produce100-kfake-raw")["records_per_sec"],
    "franz_consume_1k_vs_copy": res("consume1k")["mb_per_sec"] / res("baseline-copy", "copy")["mb_per_sec"],
    "franz_latency_p99_vs_append_rtt_p99": res("latency")["latency"]["p99_ms"] / p99("baseline-rtt", "append-rtt"),
}
absolute = {
    "produce_1k_raw_MBps": res("produce1k-raw")["mb_per_sec"],
    "produce_1k_MBps": res("produce1k")["mb_per_sec"],
    "append_deleting_MBps": res("baseline", "append")["mb_per_sec"],
    "produce_1k_keep_raw_MBps": res("produce1k-keep-raw")["mb_per_sec"],
    "append_keep_MBps": res("baseline-keep", "append")["mb_per_sec"],
    "produce_100b_spool_rps": res("produce100-spool")["records_per_sec"],
    "produce_100b_kfake_rps": res("produce100-kfake")["records_per_sec"],
    "produce_100b_spool_raw_rps": res("produce100-spool-raw")["records_per_sec"],
    "produce_100b_kfake_raw_rps": res("produce100-kfake-raw")["records_per_sec"],
    "consume_1k_raw_MBps": res("consume1k-raw")["mb_per_sec"],
    "consume_1k_MBps": res("consume1k")["mb_per_sec"],
    "copy_MBps": res("baseline-copy", "copy")["mb_per_sec"],
    "fetch_sendfile_MBps": fetch["sendfile"]["consume_MB/s"],
    "fetch_copy_MBps": fetch["copy"]["consume_MB/s"],
    "fetch_sendfile_cpu_s_per_GB": fetch["sendfile"]["server_cpu_s/GB"],
    "fetch_copy_cpu_s_per_GB": fetch["copy"]["server_cpu_s/GB"],
    "produce_raw_p99_ms": p99("latency-raw"),
    "produce_p99_ms": res("latency")["latency"]["p99_ms"],
    "append_rtt_p99_ms": p99("baseline-rtt", "append-rtt"),
    "rtt_p99_ms": p99("baseline-rtt", "rtt"),
    "copy_sender_cpu_s_per_GB": res("baseline-copy", "copy").get("extra", {}).get("cpu_seconds_per_gb", 0),
    "records_per_batch_1k": res("produce1k").get("extra", {}).get("records_per_batch", 0),
}
json.dump({"ratios": ratios, "absolute": absolute}, open(f"{r}/ratios.json", "w"), indent=2)
EOF
	jq -c .ratios "$r/ratios.json" >&2
	# A fast node writes gigabytes a run; the figures are kept, the logs go.
	[[ "${KEEP:-0}" == 1 ]] || rm -rf "$r/spool-data" "$r/kfake-data"
done

idle=""
if ((IDLE_PARTITIONS > 0)); then
	echo "bench-compare: $IDLE_PARTITIONS idle partitions (once)" >&2
	(cd "$repo" && go test ./integration -run '^$' -bench 'BenchmarkIdlePartitions' -benchtime 1x -count 1 \
		-timeout 60m -bench.partitions "$IDLE_PARTITIONS") >"$work/idle.txt"
	idle=$(grep '^BenchmarkIdlePartitions' "$work/idle.txt" || true)
fi

python3 - "$work" "$RUNS" "$IDLE_PARTITIONS" "$idle" "$RETAIN_BYTES" "$retention_note" <<'EOF' | tee "${OUT:-/dev/null}"
import json, re, statistics, sys
work, runs, idle_n, idle = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
retain, retention_note = int(sys.argv[5]), sys.argv[6]
per_run = [json.load(open(f"{work}/run{i}/ratios.json")) for i in range(1, runs + 1)]
rows = [
    ("produce 1 KiB, acks=1, several producers (MB/s vs append baseline: write(2) to a file that keeps all; the topic keeps all; raw load)", "produce_1k_keeping_vs_keeping_append", ">=", 0.7),
    ("produce 100 B (records/s vs kfake with on-disk storage; the same raw load on both)", "raw_produce_100b_vs_kfake", ">=", 1.5),
    ("consume 1 KiB from page cache (MB/s vs loopback copy; raw fetch loop)", "consume_1k_vs_copy", ">=", 0.5),
    ("fetch: sendfile vs user-space copy, throughput", "sendfile_vs_copy_throughput", ">=", 0.9),
    ("fetch: sendfile vs user-space copy, server CPU per GB", "sendfile_vs_copy_cpu_per_gb", "<=", 1.0),
    ("p99 produce latency, acks=1, one in flight (vs append round trip p99, 1 record a batch; the same raw client)", "latency_p99_vs_append_rtt_p99", "<=", 1.5),
    (f"  the same, both keeping only the last {retain / 2**20:.0f} MiB: the baseline's writes never reach the disk, Spool fsyncs each rolled segment (as Kafka does)", "produce_1k_vs_append", ">=", 0.7),
    (f"  the same 1 KiB produce driven by franz-go (vs the append baseline keeping {retain / 2**20:.0f} MiB)", "franz_produce_1k_vs_append", ">=", 0.7),
    ("  the same 100 B produce driven by franz-go on both (bound by franz-go's CPU on 2 cores)", "produce_100b_vs_kfake", ">=", 1.5),
    ("  the same consume with franz-go (vs loopback copy)", "franz_consume_1k_vs_copy", ">=", 0.5),
    ("  the same raw p99 latency vs the bare round trip's p99 (the same request answered, nothing written)", "latency_p99_vs_rtt_p99", "<=", 1.5),
    ("  the same p99 latency with franz-go (vs append round trip p99)", "franz_latency_p99_vs_append_rtt_p99", "<=", 1.5),
]
print(f"| figure | goal | " + " | ".join(f"run {i}" for i in range(1, runs + 1)) + " | median | met |")
print("|---|---|" + "---|" * runs + "---|---|")
for label, key, op, goal in rows:
    vals = [r["ratios"][key] for r in per_run]
    med = statistics.median(vals)
    met = med >= goal if op == ">=" else med <= goal
    print(f"| {label} | {op.replace('>=', '≥').replace('<=', '≤')} {goal}× | " + " | ".join(f"{v:.2f}×" for v in vals)
          + f" | **{med:.2f}×** | {'yes' if met else 'NO'} |")
if retention_note:
    print()
    print(f"note: {retention_note}")
print()
print("absolute figures (median of runs; for context only, the machine is shared):")
for key in per_run[0]["absolute"]:
    print(f"  {key:32s} {statistics.median(r['absolute'][key] for r in per_run):12.4g}")
if idle:
    m = dict((k, float(v)) for v, k in re.findall(r"([\d.e+-]+) (\S+)", idle.split("ns/op", 1)[-1]))
    per = m.get("heap_B/partition", 0)
    print()
    print(f"| {idle_n} idle partitions | figure | goal |")
    print("|---|---|---|")
    print(f"| heap in use per idle partition | {per/1024:.1f} KiB | ≤ 16 KiB: {'yes' if per <= 16*1024 else 'NO'} |")
    print(f"| resident memory per idle partition | {m.get('rss_B/partition', 0)/1024:.1f} KiB | ≤ 16 KiB: {'yes' if m.get('rss_B/partition', 0) <= 16*1024 else 'NO'} |")
    print(f"| open files per partition | {m.get('fds/partition', 0):.3f} | — |")
    print(f"| create (kadm, {idle_n} partitions) | {m.get('create_s', 0):.1f} s | — |")
    print(f"| restart: SIGTERM to exit | {m.get('shutdown_s', 0):.2f} s | — |")
    print(f"| restart: start to /readyz | {m.get('restart_to_ready_s', 0):.2f} s | reported |")
    print(f"| restart: start to a produce acknowledged by the last partition | {m.get('restart_to_serving_s', 0):.2f} s | reported |")
EOF
