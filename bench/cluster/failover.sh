#!/usr/bin/env bash
# Viewer gap when the holder of a stream dies (issue 46, the cluster registry; the goal
# is a gap of at most the lease TTL + 2 s).
#
# A 3-member etcd on loopback; origins A and B and an edge E, each a strom with a
# `Cluster` block on it (lease_ttl_secs TTL); E has an `Edge` rule for `live` whose
# origins are [B, A] (RTMP). An encoder (ffmpeg, 320x240 testsrc2 at 30 fps, x264
# ultrafast zerolatency, 1 s GOP, AAC) publishes live/x to A; a viewer (ffmpeg
# `-vf showinfo -f null -`, bench/cluster/failover.py) plays rtmp://E/live/x and every
# decoded frame is timestamped by the wall clock as its line arrives. Once the viewer
# has played for a few seconds, A's whole session (supervisor and workers) is killed
# with SIGKILL, as a crash, and at once an encoder loop starts publishing live/x to B,
# again every 0.5 s while B refuses it (B refuses while A's claim lives, i.e. until A's
# lease expires). The figure is the viewer's gap: its last frame before the kill to its
# first frame after it (the same viewer: E keeps its RTMP players while the pull fails
# over). Also shown, from /manage/cluster polled every 100 ms: the kill to A's claim
# gone from E's copy, to B's claim in E's copy, and the publishes B refused meanwhile.
# Each TTL is run RUNS times, every run with fresh servers (and fresh server ids).
#
# "etcd disconnects" counts the sessions to etcd B and E lost during the run (their
# "etcd unreachable" warnings). ETCD_FLAGS adds flags to every etcd member (e.g.
# "--grpc-keepalive-min-time 500ms"); STROM_BIN names another strom binary.
#
#   bash bench/cluster/failover.sh [--no-build] [--ttls "2 5"] [--runs 3] [--keep]
# Prints a Markdown table (one row per run); --keep keeps the temp dir (logs).
# Ports: strom 18800-18822, etcd 18830-18835. Needs ffmpeg, curl, python3, etcd
# (Debian etcd-server), setsid/taskset (util-linux) and pkill (procps).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
STROM_BIN=${STROM_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/strom}
BUILD=1
TTLS="2 5"
RUNS=3
KEEP=0
BASE=18800
ETCD_PORT=18830

while (($#)); do
    case $1 in
        --no-build) BUILD=0 ;;
        --ttls) TTLS=$2; shift ;;
        --runs) RUNS=$2; shift ;;
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
    (cd "$ROOT" && cargo build --release -p strom >&2)
fi
[[ -x $STROM_BIN ]] || cluster_die "$STROM_BIN missing (cargo build --release -p strom)"

dir=$(mktemp -d)
PIDS=()
ENCODER_SESSIONS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${ENCODER_SESSIONS[@]}"; do kill_session "$pid"; done
    stop_all_sessions
    etcd_stop
    wait 2>/dev/null || true
    if ((KEEP)); then echo "kept $dir" >&2; else rm -rf "$dir"; fi
}
trap cleanup EXIT


http_port() { echo $((BASE + 10 * $1)); }
mgmt_port() { echo $((BASE + 10 * $1 + 1)); }
rtmp_port() { echo $((BASE + 10 * $1 + 2)); }
A=0 B=1 E=2

encoder() { # rtmp url
    exec ffmpeg -hide_banner -loglevel error -nostdin -re -f lavfi -i testsrc2=size=320x240:rate=30 \
        -f lavfi -i sine=frequency=440:sample_rate=48000 -c:v libx264 -preset ultrafast \
        -tune zerolatency -g 30 -pix_fmt yuv420p -c:a aac -b:a 64k -f flv "$1"
}

# Server I (A, B or E) in $run_dir/sI with server id ID; E's extra rules in $3.
start() {
    local d=$run_dir/s$1 advertise=
    mkdir -p "$d"
    [[ $1 == "$E" ]] || advertise="\"rtmp://127.0.0.1:$(rtmp_port "$1")\""
    echo "{$(cluster_block "$2" "$ttl" "$advertise")
 \"RtmpSettings\": {\"interfaces\": [{\"ip\": \"127.0.0.1\", \"port\": $(rtmp_port "$1")}]},
 \"Delivery\": {\"outputs\": []} ${3:-}}" >"$d/rules.conf"
    strom_start_session "$d" "$(http_port "$1")" "$(mgmt_port "$1")" 0-1 || cluster_die "server $2 did not start"
    wait_cluster_connected "$(mgmt_port "$1")" || cluster_die "server $2 did not connect to etcd"
}

holder_at() { # server stream-holder-id: whether SERVER's copy says ID holds live/x
    cluster_state "$(mgmt_port "$1")" | grep -q "\"app\":\"live\",\"stream\":\"x\",\"server\":\"$2\""
}

etcd_start "$dir" "$ETCD_PORT"
echo "| lease TTL s | run | viewer gap s | kill → last frame s | kill → first frame after s | kill → A's claim gone at E s | kill → B's claim at E s | publishes B refused | etcd disconnects B/E | goal (TTL + 2 s) |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"
for ttl in $TTLS; do
    for ((run = 1; run <= RUNS; run++)); do
        run_dir=$dir/ttl$ttl-run$run
        mkdir -p "$run_dir"
        a=a-$ttl-$run b=b-$ttl-$run
        export STROM_LOGGING=info
        start "$A" "$a"
        sid_a=$STROM_PID
        start "$B" "$b"
        sid_b=$STROM_PID
        start "$E" "e-$ttl-$run" ", \"Edge\": [{\"apps\": [\"live\"], \"idle_grace_secs\": 5,
  \"origins\": [\"rtmp://127.0.0.1:$(rtmp_port "$B")\", \"rtmp://127.0.0.1:$(rtmp_port "$A")\"]}]"
        sid_e=$STROM_PID

        encoder "rtmp://127.0.0.1:$(rtmp_port "$A")/live/x" </dev/null 2>"$run_dir/encoder-a.err" &
        enc_a=$!
        PIDS+=("$enc_a")
        claimed=0
        for _ in $(seq 150); do
            if holder_at "$E" "$a"; then claimed=1; break; fi
            sleep 0.1
        done
        ((claimed)) || cluster_die "A's claim of live/x never reached the edge"

        python3 "$ROOT/bench/cluster/failover.py" watch --url "rtmp://127.0.0.1:$(rtmp_port "$E")/live/x" \
            --frames "$run_dir/frames" --polls "$run_dir/polls" \
            --server "edge=$(mgmt_port "$E")" --server "new=$(mgmt_port "$B")" &
        watcher=$!
        PIDS+=("$watcher")
        playing=0
        for _ in $(seq 300); do
            if [[ -f $run_dir/frames ]] && (($(wc -l <"$run_dir/frames") >= 90)); then playing=1; break; fi
            sleep 0.1
        done
        ((playing)) || cluster_die "the viewer got no frames through the edge (see $run_dir)"
        sleep 2

        kill_at=$(date +%s.%N)
        kill_session "$sid_a"
        kill "$enc_a" 2>/dev/null || true
        # The encoder loop in its own session, so that its ffmpeg goes with it.
        setsid bash -c '
            while true; do
                echo "$(date +%s.%N) attempt" >>"$2"
                ffmpeg -hide_banner -loglevel error -nostdin -re -f lavfi -i testsrc2=size=320x240:rate=30 \
                    -f lavfi -i sine=frequency=440:sample_rate=48000 -c:v libx264 -preset ultrafast \
                    -tune zerolatency -g 30 -pix_fmt yuv420p -c:a aac -b:a 64k -f flv "$1" </dev/null 2>>"$2.err" || true
                sleep 0.5
            done' loop "rtmp://127.0.0.1:$(rtmp_port "$B")/live/x" "$run_dir/attempts" &
        loop=$!
        ENCODER_SESSIONS=("$loop")

        # Until the viewer has played 2 s past the new holder's claim, or TTL + 30 s.
        end=$((SECONDS + ttl + 30))
        while ((SECONDS < end)); do
            if holder_at "$E" "$b"; then
                sleep 2
                fresh=$(awk -v now="$(date +%s.%N)" 'END { print (now - $1 < 0.5) ? 1 : 0 }' "$run_dir/frames")
                ((fresh)) && break
            fi
            sleep 0.2
        done
        sleep 1
        kill "$watcher" 2>/dev/null || true
        wait "$watcher" 2>/dev/null || true
        kill_session "$loop"
        ENCODER_SESSIONS=()

        r=$(python3 "$ROOT/bench/cluster/failover.py" report --frames "$run_dir/frames" \
            --polls "$run_dir/polls" --kill "$kill_at" --old "$a" --new "$b")
        echo "$r" >"$run_dir/report.json"
        # Sessions to etcd that ended (the server logs each loss of a working connection).
        drops="$(grep -c 'etcd unreachable' "$run_dir/s$B/strom.log" || true)/$(grep -c 'etcd unreachable' "$run_dir/s$E/strom.log" || true)"
        python3 - "$r" "$ttl" "$run" "$drops" <<'PY'
import json, sys
r, ttl, run, drops = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
f = lambda v: "-" if v is None else f"{v:.2f}"
gap = r.get("gap_s")
if gap is None or not r.get("resumed"):
    verdict = "viewer did not resume"
else:
    verdict = "met" if gap <= ttl + 2 else f"missed by {gap - ttl - 2:.2f} s"
print(f"| {ttl} | {run} | {f(gap)} | {f(r.get('last_frame_before_gap_s'))} | "
      f"{f(r.get('kill_to_first_frame_after_s'))} | {f(r.get('edge_holder_gone_s'))} | "
      f"{f(r.get('edge_holder_new_s'))} | {r.get('new_refused_publishes', '-')} | {drops} | {verdict} |")
PY
        for sid in "$sid_b" "$sid_e"; do stop_session "$sid"; done
        STROM_SESSIONS=()
        sleep 1
    done
done
if ((KEEP)); then
    echo "logs: $dir/ttl*-run*/s*/strom.log, viewer: frames.log, encoder loop: attempts.err" >&2
fi
