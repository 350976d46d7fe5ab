#!/usr/bin/env bash
# Claim and resolve latency of the cluster registry with ORIGINS origins x PER streams
# (issue 46: 4 x 2,500), and etcd's CPU and memory there.
#
# A 3-member etcd on loopback; ORIGINS strom origins and one edge, each with a `Cluster`
# block on it (RTMP limits raised for PER publishers each). The load generator
# `cluster-load` (bench/cluster_load: light RTMP publishers, an AVC sequence header and
# a 64x64 keyframe every 4 s each, no real encoders) publishes live/s<i> to the origins
# round-robin at RATE publishes/s in all. Meanwhile bench/cluster/claims.py polls the
# edge's GET /manage/cluster every 200 ms and notes when each stream is first listed
# there. Reported:
#   - claims: each origin's claim transaction round trip, p50 and p99 of its last 1,024
#     claims (`claim_p50_ms`, `claim_p99_ms` of its /manage/cluster) and the watch lag
#     p99 (its own committed claim to its arrival through its watch), conflicts;
#   - resolve: publish accepted (the generator's NetStream.Publish.Start) to the stream
#     listed in the edge's copy, over every stream (an upper bound: the answer's arrival
#     of a poll every 200 ms), and first publish to every stream listed;
#   - etcd: CPU of the 3 members (utime+stime from /proc, in % of one core) in three
#     phases: the ramp (first publish to every stream listed), a STEADY s hold (leases
#     kept alive, nothing changing) and the release (SIGTERM to the generator: every
#     publisher hangs up at once, and every stream's key should be deleted; the edge
#     is polled until it lists none, 60 s at most, and what it still lists then is
#     reported); RSS per member at the end of the ramp and its peak (VmHWM), and the
#     database size (etcd's /metrics);
#   - the machine's CPU over the ramp: etcd, the strom processes (origins and edge,
#     every worker), the generator, the poller, and everything else (other work on
#     the machine: latencies here are CPU-bound when it is busy);
#   - the etcd sessions the servers lost (their "etcd unreachable" warnings).
# ETCD_FLAGS adds flags to every etcd member (e.g. "--grpc-keepalive-min-time 500ms");
# STROM_BIN and GEN name other binaries.
#
#   bash bench/cluster/claims.sh [--no-build] [--origins 4] [--per 2500] [--rate 100]
#                                [--steady 10] [--keep]
# Prints Markdown tables. Builds strom and cluster-load (release) unless --no-build.
# Ports: strom 18900-18942, etcd 18950-18955. Needs ffmpeg (the keyframe), curl,
# python3, etcd (Debian etcd-server), setsid/taskset (util-linux), pkill (procps), and
# an open-files limit (hard) above ORIGINS x PER + 1,000 for the generator.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
STROM_BIN=${STROM_BIN:-$TARGET_DIR/release/strom}
GEN=${GEN:-$TARGET_DIR/release/cluster-load}
BUILD=1
ORIGINS=4
PER=2500
RATE=100
STEADY=10
KEEP=0
BASE=18900
ETCD_PORT=18950

while (($#)); do
    case $1 in
        --no-build) BUILD=0 ;;
        --origins) ORIGINS=$2; shift ;;
        --per) PER=$2; shift ;;
        --rate) RATE=$2; shift ;;
        --steady) STEADY=$2; shift ;;
        --keep) KEEP=1 ;;
        -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

# shellcheck source=bench/cluster/lib.sh
source "$ROOT/bench/cluster/lib.sh"
cluster_need ffmpeg ffmpeg

if ((BUILD)); then
    (cd "$ROOT" && cargo build --release -p strom -p strom-bench-cluster-load >&2)
fi
[[ -x $STROM_BIN ]] || cluster_die "$STROM_BIN missing (cargo build --release -p strom)"
[[ -x $GEN ]] || cluster_die "$GEN missing (cargo build --release -p strom-bench-cluster-load)"
TOTAL=$((ORIGINS * PER))
FDS=$((TOTAL + 1000))
if (($(ulimit -Hn) < FDS)); then
    cluster_die "the open-files hard limit ($(ulimit -Hn)) is under $FDS: raise it (ulimit -Hn as root, or limits.conf)"
fi
ulimit -n "$FDS"

dir=$(mktemp -d)
GEN_PID=
POLLER=
cleanup() {
    [[ -n $GEN_PID ]] && kill "$GEN_PID" 2>/dev/null || true
    [[ -n $POLLER ]] && kill "$POLLER" 2>/dev/null || true
    stop_all_sessions
    etcd_stop
    wait 2>/dev/null || true
    if ((KEEP)); then echo "kept $dir" >&2; else rm -rf "$dir"; fi
}
trap cleanup EXIT


http_port() { echo $((BASE + 10 * $1)); }
mgmt_port() { echo $((BASE + 10 * $1 + 1)); }
rtmp_port() { echo $((BASE + 10 * $1 + 2)); }
EDGE=0

# utime+stime ticks of the etcd members, and of every strom session.
etcd_ticks() {
    local pid sum=0 stat
    for pid in "${ETCD_PIDS[@]}"; do
        stat=$(cat "/proc/$pid/stat") || continue
        stat=${stat##*) }
        read -r -a f <<<"$stat"
        sum=$((sum + f[11] + f[12]))
    done
    echo "$sum"
}
strom_ticks() {
    local sid pid stat sum=0
    for sid in "${STROM_SESSIONS[@]}"; do
        for pid in $(pgrep -s "$sid"); do
            stat=$(cat "/proc/$pid/stat" 2>/dev/null) || continue
            stat=${stat##*) }
            read -r -a f <<<"$stat"
            sum=$((sum + f[11] + f[12]))
        done
    done
    echo "$sum"
}
# "RSS/peak MiB" of every member, comma-separated.
etcd_rss() {
    local pid out=
    for pid in "${ETCD_PIDS[@]}"; do
        out+=$(awk '/^VmRSS/ { r = $2 } /^VmHWM/ { h = $2 } END { printf "%.0f/%.0f, ", r / 1024, h / 1024 }' "/proc/$pid/status")
    done
    echo "${out%, }"
}
etcd_metric() { # name: its value on member 0
    curl -s "http://127.0.0.1:$ETCD_PORT/metrics" | awk -v n="$1" '$1 == n { print $2 }'
}
wait_ready() { # file: created by the poller after its first answer
    for _ in $(seq 300); do
        [[ -e $1 ]] && return 0
        kill -0 "$POLLER" 2>/dev/null || cluster_die "the poller ended before its first answer"
        sleep 0.1
    done
    cluster_die "the poller got no answer from the edge"
}
# Sessions to etcd that ended, over every strom (each logs the loss of a working one).
etcd_drops() { cat "$dir"/s*/strom.log | grep -c 'etcd unreachable' || true; }
# Busy ticks of the whole machine (every core; idle and iowait excluded).
machine_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat; }
pid_ticks() { # pid
    local stat f
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || { echo 0; return; }
    stat=${stat##*) }
    read -r -a f <<<"$stat"
    echo $((f[11] + f[12]))
}
HZ=$(getconf CLK_TCK)
now() { date +%s.%N; }
pct() { # ticks seconds -> % of one core
    python3 -c "print(f'{$1 / $HZ / max($2, 0.001) * 100:.1f}')"
}

etcd_start "$dir" "$ETCD_PORT"
echo "etcd members: pids ${ETCD_PIDS[*]}" >&2
for ((i = 0; i <= ORIGINS; i++)); do
    d=$dir/s$i
    mkdir -p "$d"
    if ((i == EDGE)); then
        id=edge advertise= extra=", \"Edge\": [{\"apps\": [\"live\"], \"origins\": [\"rtmp://127.0.0.1:$(rtmp_port 1)\"]}]"
    else
        id=origin-$i advertise="\"rtmp://127.0.0.1:$(rtmp_port "$i")\"" extra=
    fi
    echo "{$(cluster_block "$id" 5 "$advertise")
 \"RtmpSettings\": {\"interfaces\": [{\"ip\": \"127.0.0.1\", \"port\": $(rtmp_port "$i")}],
   \"limits\": {\"max_publishers\": $((PER + 500)), \"max_connections\": $((PER + 1000)),
                \"max_connections_per_ip\": $((PER + 1000))}},
 \"Delivery\": {\"outputs\": []} $extra}" >"$d/rules.conf"
    strom_start_session "$d" "$(http_port "$i")" "$(mgmt_port "$i")" 0-1 || cluster_die "server $id did not start"
    wait_cluster_connected "$(mgmt_port "$i")" || cluster_die "server $id did not connect to etcd"
done

ffmpeg -hide_banner -loglevel error -nostdin -f lavfi -i testsrc2=size=64x64:rate=1 -frames:v 1 \
    -c:v libx264 -preset ultrafast -tune zerolatency -pix_fmt yuv420p -an -f flv "$dir/key.flv"

targets=
for ((i = 1; i <= ORIGINS; i++)); do targets+="rtmp://127.0.0.1:$(rtmp_port "$i")/live,"; done
ramp_secs=$(python3 -c "print(int($TOTAL / $RATE) + 1)")

# Ramp: every publisher on, until the edge lists every stream.
t0=$(now) e0=$(etcd_ticks) s0=$(strom_ticks) m0=$(machine_ticks)
python3 "$ROOT/bench/cluster/claims.py" poll --port "$(mgmt_port "$EDGE")" --expect "$TOTAL" \
    --timeout $((ramp_secs + 120)) --out "$dir/seen.json" --ready "$dir/seen.ready" &
POLLER=$!
wait_ready "$dir/seen.ready"
"$GEN" --target "${targets%,}" --per-target "$PER" --rate "$RATE" --flv "$dir/key.flv" \
    --keyframe-secs 4 --hold-secs 3600 --events "$dir/events.jsonl" >"$dir/gen.json" 2>"$dir/gen.err" &
GEN_PID=$!
wait "$POLLER" || cluster_die "the poller failed"
POLLER=
t1=$(now) e1=$(etcd_ticks) s1=$(strom_ticks) d1=$(etcd_drops) m1=$(machine_ticks) g1=$(pid_ticks "$GEN_PID")
rss_ramp=$(etcd_rss)
for ((i = 1; i <= ORIGINS; i++)); do
    cluster_state "$(mgmt_port "$i")" >"$dir/origin-$i.json"
done
db_ramp=$(etcd_metric etcd_mvcc_db_total_size_in_bytes)
keys_ramp=$(etcd_metric etcd_debugging_mvcc_keys_total)

# Steady: nothing changes, leases kept alive.
sleep "$STEADY"
t2=$(now) e2=$(etcd_ticks) d2=$(etcd_drops)

# Release: the generator hangs up, until the edge lists none.
python3 "$ROOT/bench/cluster/claims.py" poll --port "$(mgmt_port "$EDGE")" --gone \
    --timeout 60 --out "$dir/gone.json" --ready "$dir/gone.ready" &
POLLER=$!
wait_ready "$dir/gone.ready"
stopped=$(now)
kill -TERM "$GEN_PID"
wait "$GEN_PID" || true
GEN_PID=
wait "$POLLER" || cluster_die "the poller failed"
POLLER=
t3=$(now) e3=$(etcd_ticks) d3=$(etcd_drops)
rss_end=$(etcd_rss)

report=$(python3 "$ROOT/bench/cluster/claims.py" report --events "$dir/events.jsonl" \
    --seen "$dir/seen.json" --gone "$dir/gone.json" --stopped "$stopped")
echo "$report" >"$dir/report.json"
echo "generator: $(cat "$dir/gen.json")" >&2
echo "report: $report" >&2

echo
echo "Claims, as each origin reports them (GET /manage/cluster after the ramp; p50/p99 of its last 1,024 claims):"
echo
echo "| origin | claims held | claim p50 ms | claim p99 ms | watch lag p99 ms | conflicts |"
echo "|---|---:|---:|---:|---:|---:|"
for ((i = 1; i <= ORIGINS; i++)); do
    python3 - "$dir/origin-$i.json" "origin-$i" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"| {sys.argv[2]} | {s['claims']} | {s['claim_p50_ms']:.1f} | {s['claim_p99_ms']:.1f} | "
      f"{s['watch_lag_p99_ms']:.1f} | {s['conflicts']} |")
PY
done
echo
python3 - "$report" "$(cat "$dir/gen.json")" "$ORIGINS" "$PER" "$RATE" <<'PY'
import json, sys
r, g = json.loads(sys.argv[1]), json.loads(sys.argv[2])
origins, per, rate = sys.argv[3:6]
lag = r.get("accepted_to_listed_s", {})
ms = lambda k: f"{lag[k] * 1000:.0f}" if k in lag else "-"
print(f"Resolve: {origins} x {per} publishers at {rate}/s; publishes accepted {g['accepted']}, "
      f"refused {g['refused']}, failed {g['failed']}, ended by the server {g['ended_early']}; "
      f"connect to publish accepted p50 {g['accept_p50_ms']} ms, p99 {g['accept_p99_ms']} ms.")
print()
print("| streams listed at the edge | accepted → listed p50 ms | p90 ms | p99 ms | max ms | first publish → all listed s | last accept → all listed s | generator stopped → last one gone s | still listed 60 s after the stop |")
print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
print(f"| {r['listed_at_edge']} | {ms('p50')} | {ms('p90')} | {ms('p99')} | {ms('max')} | "
      f"{r.get('first_publish_to_all_listed_s', '-')} | {r.get('last_accept_to_all_listed_s', '-')} | "
      f"{r.get('stop_to_all_gone_s', '-')} | {r.get('still_listed_at_end', '-')} |")
PY
ramp=$(python3 -c "print($t1 - $t0)")
steady=$(python3 -c "print($t2 - $t1)")
release=$(python3 -c "print($t3 - $t2)")
echo
echo "etcd (3 members together; CPU in % of one core over each phase):"
echo
echo "| phase | length s | etcd CPU % | etcd CPU s | strom CPU % (origins + edge) | etcd sessions lost (all servers) |"
echo "|---|---:|---:|---:|---:|---:|"
printf '| ramp (%s publishes/s) | %.1f | %s | %.1f | %s | %s |\n' "$RATE" "$ramp" "$(pct $((e1 - e0)) "$ramp")" \
    "$(python3 -c "print($((e1 - e0)) / $HZ)")" "$(pct $((s1 - s0)) "$ramp")" "$d1"
printf '| steady (%s keys) | %.1f | %s | %.1f | - | %s |\n' "$TOTAL" "$steady" "$(pct $((e2 - e1)) "$steady")" \
    "$(python3 -c "print($((e2 - e1)) / $HZ)")" "$((d2 - d1))"
printf '| release | %.1f | %s | %.1f | - | %s |\n' "$release" "$(pct $((e3 - e2)) "$release")" \
    "$(python3 -c "print($((e3 - e2)) / $HZ)")" "$((d3 - d2))"
echo
python3 - "$HZ" "$ramp" "$((m1 - m0))" "$((e1 - e0))" "$((s1 - s0))" "$g1" "$report" <<'PY'
import json, sys
hz, ramp = float(sys.argv[1]), float(sys.argv[2])
machine, etcd, strom, gen = (int(v) / hz for v in sys.argv[3:7])
poller = json.loads(sys.argv[7]).get("poller_cpu_s") or 0
other = machine - etcd - strom - gen - poller
pct = lambda v: f"{v / ramp * 100:.0f}%"
print(f"CPU over the ramp, in % of one core (2 cores: 200%): machine busy {pct(machine)}; etcd {pct(etcd)}, "
      f"strom {pct(strom)}, cluster-load {pct(gen)}, the edge poller {pct(poller)}, everything else {pct(other)}.")
PY
echo
echo "etcd memory: RSS/peak MiB per member after the ramp: $rss_ramp; at the end: $rss_end;"
echo "database size after the ramp: $(python3 -c "print(f'{${db_ramp:-0} / 1048576:.1f}')") MiB, keys: ${keys_ramp:-?}."
