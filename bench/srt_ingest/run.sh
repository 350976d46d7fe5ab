#!/usr/bin/env bash
# SRT ingest benchmark: MPEG-TS over SRT in, HLS out. strom's CPU per ingested Mbit/s and
# ingest-to-HLS latency, side by side with srt-live-transmit relaying the same stream (SRT
# in, UDP out: the floor for SRT handling) in one run.
#
# A 720p30 H.264 + AAC MPEG-TS clip (~4 Mbit/s video, a keyframe every 1 s, 60 s) is encoded
# once and sent in a loop by `ffmpeg -re -stream_loop -1 -c copy` over UDP through a small tap
# (srtbench.py: logs the wall time of each video keyframe, counts the bytes) to an
# `srt-live-transmit` SRT caller (latency 120 ms), which pushes it to the server under test.
# Both servers get the same chain, one after the other; the server runs alone on core 0
# (strom's supervisor and every worker inherit the pinning), the chain, the relay's UDP sink
# and the playlist poller on core 1. strom: an SRT listener camera (latency 120), HLS with
# 1 s segments. srt-live-transmit: `srt://:PORT?mode=listener&latency=120` to a UDP sink.
#
# 1. CPU: utime+stime (from /proc) of the server's process tree over --duration seconds after
#    --warmup seconds, divided by the Mbit that went through the tap in that window (the
#    server's own count is shown too: strom's libsrt bytesReceived from
#    /manage/srt_receiver_stats, the bytes the relay's UDP sink got). No HLS client during
#    the window.
# 2. Latency (strom): after the CPU window the media playlist is polled every 20 ms until
#    --latency-segments new segments appeared (bench/hls_serving/hlsbench.py latency);
#    latency = appearance - arrival at the tap of the keyframe that ended the segment (the
#    newest keyframe before the appearance; valid while the latency stays under the 1 s
#    keyframe interval). It includes the SRT buffer (120 ms), the UDP hop and the caller.
#    Split by PROGRAM-DATE-TIME + EXTINF (strom's cut time) into "keyframe -> cut" and
#    "cut -> listed". For the relay, the same keyframes' transit from the tap to its UDP
#    sink (matched by PTS) during warm-up and window: the transport floor.
# Before each server the script waits for the cores to be free of other load, and repeats a
# window that other load on core 0 disturbed (--retries). Traffic goes to 127.0.0.1 only;
# nothing is installed; results go to stdout (markdown), progress to stderr.
#
#   bash bench/srt_ingest/run.sh [--only strom|relay] [--duration 30] [--warmup 10]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/bench/srt_ingest
CMDLINE="bash bench/srt_ingest/run.sh${*:+ $*}"
ONLY=both
DURATION=30
WARMUP=10
LATENCY_SEGMENTS=20
POLL_MS=20
STROM_HTTP_PORT=18271
STROM_MGMT_PORT=18272
STROM_RTMP_PORT=19381
STROM_SRT_PORT=19390
RELAY_SRT_PORT=19391
TAP_PORT=19392      # ffmpeg -> tap (UDP)
CALLER_PORT=19393   # tap -> srt-live-transmit caller (UDP)
SINK_PORT=19394     # relay -> sink (UDP)
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
STROM_BIN=$TARGET_DIR/release/strom
BUILD=1
KEEP=0
QUIET_WAIT=120  # before each server, wait up to this long for the cores to be free of other load
RETRIES=2       # repeat a window disturbed by other load on core 0 up to this often

usage() { sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; cat <<EOF
options: --only strom|relay|both ($ONLY)  --duration SECS ($DURATION)  --warmup SECS ($WARMUP)
         --latency-segments N ($LATENCY_SEGMENTS, >= 20 for the p95)  --poll-ms MS ($POLL_MS)
         --strom-bin PATH ($STROM_BIN)  --quiet-wait SECS ($QUIET_WAIT)  --retries N ($RETRIES)
         --no-build  --keep (keep the temp dir with clip, configs, logs and JSON)
ports: strom http/management/rtmp/srt $STROM_HTTP_PORT/$STROM_MGMT_PORT/$STROM_RTMP_PORT/$STROM_SRT_PORT,
       relay srt $RELAY_SRT_PORT, udp tap/caller/sink $TAP_PORT/$CALLER_PORT/$SINK_PORT
EOF
}

while (($#)); do
    case $1 in
        --only) ONLY=$2; shift ;;
        --duration) DURATION=$2; shift ;;
        --warmup) WARMUP=$2; shift ;;
        --latency-segments) LATENCY_SEGMENTS=$2; shift ;;
        --poll-ms) POLL_MS=$2; shift ;;
        --strom-bin) STROM_BIN=$2; shift ;;
        --quiet-wait) QUIET_WAIT=$2; shift ;;
        --retries) RETRIES=$2; shift ;;
        --no-build) BUILD=0 ;;
        --keep) KEEP=1 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
case $ONLY in strom) SERVERS=(strom) ;; relay) SERVERS=(relay) ;; both) SERVERS=(strom relay) ;;
    *) echo "--only takes strom, relay or both" >&2; exit 2 ;; esac

die() { echo "run.sh: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || die "$1 not found: install the Debian package $2"; }
need ffmpeg ffmpeg
need srt-live-transmit srt-tools
need taskset util-linux
need curl curl
need python3 python3
(($(nproc) >= 2)) || die "needs 2 cores (server on core 0, sender chain, sink and poller on core 1)"

if ((BUILD)) && [[ $ONLY != relay ]]; then
    (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR cargo build --release -p strom) >&2
fi
[[ $ONLY == relay || -x $STROM_BIN ]] || die "$STROM_BIN missing (cargo build --release -p strom)"

TMP=$(mktemp -d /tmp/srt-ingest.XXXXXX)
PIDS=()
stop_all() { # ends this script's own background processes, newest first
    local i
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill "${PIDS[i]}" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    PIDS=()
}
cleanup() {
    stop_all
    if ((KEEP)); then echo "clip, configs, logs and results kept in $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "[$(date +%T)] $*" >&2; }
HZ=$(getconf CLK_TCK)
now_ms() { date +%s%3N; }

# tree_ticks PID: utime+stime (clock ticks) of PID and all its descendants.
tree_ticks() {
    (($1 > 0)) || { echo 0; return; }
    local f line
    for f in /proc/[0-9]*/stat; do
        if read -r line 2>/dev/null <"$f"; then echo "${line%% *} ${line##*) }"; fi
    done | awk -v root="$1" '{ ppid[$1] = $3; t[$1] = $13 + $14 }
        END { n = 1; keep[root] = 1
              while (n) { n = 0; for (p in ppid) if (!(p in keep) && (ppid[p] in keep)) { keep[p] = 1; n = 1 } }
              s = 0; for (p in keep) s += t[p]; print s }'
}
tree_count() { pgrep -P "$1" | wc -l; }
cores() { grep -E '^cpu[01] ' /proc/stat | tr '\n' ' '; }
busy_between() { # busy_between "$(cores)" "$(cores)": "core0% core1%"
    awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " ")
        for (c = 0; c < 2; c++) { o = c * 11
            b1 = x[o+2]+x[o+3]+x[o+4]+x[o+7]+x[o+8]+x[o+9]; t1 = b1+x[o+5]+x[o+6]
            b2 = y[o+2]+y[o+3]+y[o+4]+y[o+7]+y[o+8]+y[o+9]; t2 = b2+y[o+5]+y[o+6]
            printf "%.0f ", (t2 > t1 ? (b2-b1)*100/(t2-t1) : 0) } print "" }'
}
wait_quiet() { # until core 0 < 10% and core 1 < 25% busy (nothing of ours runs), or QUIET_WAIT
    local t=0 a c0 c1
    while :; do
        a=$(cores); sleep 2; read -r c0 c1 < <(busy_between "$a" "$(cores)")
        ((c0 < 10 && c1 < 25)) && return 0
        ((t == 0)) && log "cores busy (core 0 ${c0}%, core 1 ${c1}%): waiting up to ${QUIET_WAIT}s"
        ((t += 2, t >= QUIET_WAIT)) && { log "still busy; measuring anyway"; return 0; }
    done
}
alive() { kill -0 "$1" 2>/dev/null; }
# counter FILE: "bytes wall_ms" written by srtbench.py (0 0 before the first datagram).
counter() { cat "$1" 2>/dev/null || echo "0 0"; }
srt_stat() { # srt_stat FIELD: strom's libsrt recv counter of the first SRT receiver (empty if none)
    curl -sf "http://127.0.0.1:$STROM_MGMT_PORT/manage/srt_receiver_stats" 2>/dev/null | python3 -c '
import json, sys
try:
    print(json.load(sys.stdin)["SrtReceivers"][0]["stats"]["recv"][sys.argv[1]])
except Exception:
    print("")' "$1" || true
}
json_get() { python3 -c 'import json,sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v.get(k) if isinstance(v, dict) else None
print("" if v is None else v)' "$@" 2>/dev/null || true; }

start_strom() {
    local dir=$TMP/strom
    cat >"$dir/strom.conf" <<EOF
listen_interfaces = 127.0.0.1
port = $STROM_HTTP_PORT
management_listen_interfaces = 127.0.0.1
management_port = $STROM_MGMT_PORT
rules_path = rules.conf
data_dir = data
run_dir = run
logging = warn
EOF
    cat >"$dir/rules.conf" <<EOF
{
  "RtmpSettings": {
    "interfaces": [{ "ip": "127.0.0.1", "port": $STROM_RTMP_PORT }],
    "duration": 1,
    "protocols": ["HLS"]
  },
  "Cameras": [{
    "id": "srt", "ip": "127.0.0.1", "port": $STROM_SRT_PORT, "protocol": "srt",
    "receive_mode": "listen", "app": "live", "stream": "bench",
    "parameters": [{ "name": "latency", "value": "120" }]
  }]
}
EOF
    taskset -c 0 "$STROM_BIN" run --config "$dir/strom.conf" >"$dir/server.log" 2>&1 &
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
    SRT_PORT=$STROM_SRT_PORT
}

start_relay() {
    local dir=$TMP/relay
    taskset -c 1 python3 "$HERE/srtbench.py" sink "$SINK_PORT" "$dir/sink-keys.log" "$dir/sink.count" 2>"$dir/sink.log" &
    SINK_PID=$!
    PIDS+=("$SINK_PID")
    taskset -c 0 srt-live-transmit -a:no "srt://127.0.0.1:$RELAY_SRT_PORT?mode=listener&latency=120" \
        "udp://127.0.0.1:$SINK_PORT" >"$dir/server.log" 2>&1 &
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
    SRT_PORT=$RELAY_SRT_PORT
}

# start_chain NAME: the tap, the srt-live-transmit caller and ffmpeg, all on core 1.
start_chain() {
    local dir=$TMP/$1
    : >"$dir/tap-keys.log"
    taskset -c 1 python3 "$HERE/srtbench.py" tap "$TAP_PORT" "$CALLER_PORT" "$dir/tap-keys.log" "$dir/tap.count" 2>"$dir/tap.log" &
    TAP_PID=$!
    PIDS+=("$TAP_PID")
    taskset -c 1 srt-live-transmit -a:yes "udp://127.0.0.1:$CALLER_PORT" "srt://127.0.0.1:$SRT_PORT?latency=120" \
        >"$dir/caller.log" 2>&1 &
    CALLER_PID=$!
    PIDS+=("$CALLER_PID")
    sleep 0.5
    SENDER_START_MS=$(now_ms)
    taskset -c 1 ffmpeg -nostdin -loglevel warning -re -stream_loop -1 -i "$TMP/clip.ts" -c copy \
        -f mpegts "udp://127.0.0.1:$TAP_PORT?pkt_size=1316" >"$dir/ffmpeg.log" 2>&1 &
    SENDER_PID=$!
    PIDS+=("$SENDER_PID")
}

chain_alive() { # chain_alive NAME: dies with the log of the first part that exited
    local dir=$TMP/$1
    alive "$SERVER_PID" || die "$1: server exited: $(tail -3 "$dir/server.log")"
    alive "$TAP_PID" || die "$1: tap exited: $(tail -3 "$dir/tap.log")"
    alive "$CALLER_PID" || die "$1: srt-live-transmit caller exited: $(tail -3 "$dir/caller.log")"
    alive "$SENDER_PID" || die "$1: ffmpeg exited: $(tail -3 "$dir/ffmpeg.log")"
}

# media_url: strom's media playlist URL (the master playlist's first URI), empty if none yet.
media_url() {
    local base="http://127.0.0.1:$STROM_HTTP_PORT/live/bench/" line
    line=$(curl -sf --max-time 2 "${base}playlist.m3u8" 2>/dev/null | tr -d '\r' | grep -v '^#' | grep -m1 .) || return 0
    case $line in http*) echo "$line" ;; /*) echo "http://127.0.0.1:$STROM_HTTP_PORT$line" ;; *) echo "$base$line" ;; esac
}

wait_ready() { # wait_ready NAME: strom: 2 segments listed; relay: the sink receives
    local dir=$TMP/$1 n=0
    for _ in $(seq 120); do
        chain_alive "$1"
        if [[ $1 == strom ]]; then
            MEDIA_URL=$(media_url)
            [[ -n $MEDIA_URL ]] && n=$(curl -sf --max-time 2 "$MEDIA_URL" 2>/dev/null | grep -c '^#EXTINF' || true)
            ((n >= 2)) && { curl -sf "$MEDIA_URL" >"$dir/media-sample.m3u8" || true; return 0; }
        else
            read -r n _ < <(counter "$dir/sink.count")
            ((n > 0)) && return 0
        fi
        sleep 0.5
    done
    die "$1: not receiving after 60 s (segments listed: $n): $(tail -3 "$dir/server.log" "$dir/caller.log")"
}

# window NAME: one CPU window; sets ROW, NOISY and CPU_MS_PER_MBIT_<NAME>.
window() {
    local name=$1 dir=$TMP/$1 a b c0 c1 t0 t1 k0 k1 tb0 tt0 tb1 tt1 s0 s1 l0 l1 d0 d1 st0 st1
    a=$(cores); t0=$(date +%s%N)
    k0=$(tree_ticks "$SERVER_PID")
    read -r tb0 tt0 < <(counter "$dir/tap.count")
    if [[ $name == strom ]]; then s0=$(srt_stat bytesReceived) l0=$(srt_stat packetsLost) d0=$(srt_stat packetsDropped)
    else read -r s0 st0 < <(counter "$dir/sink.count"); fi
    sleep "$DURATION"
    chain_alive "$name"
    k1=$(tree_ticks "$SERVER_PID")
    read -r tb1 tt1 < <(counter "$dir/tap.count")
    if [[ $name == strom ]]; then s1=$(srt_stat bytesReceived) l1=$(srt_stat packetsLost) d1=$(srt_stat packetsDropped)
    else read -r s1 st1 < <(counter "$dir/sink.count"); fi
    t1=$(date +%s%N); b=$(cores)
    # strom's count is read over the window; the sink's over its own clock, like the tap's.
    [[ $name == strom ]] && st0=$((t0 / 1000000)) st1=$((t1 / 1000000))
    read -r c0 c1 < <(busy_between "$a" "$b")
    local procs=1
    [[ $name == strom ]] && procs=$((1 + $(tree_count "$SERVER_PID")))
    # shellcheck disable=SC2046
    set -- $(awk -v k="$((k1 - k0))" -v hz="$HZ" -v ns="$((t1 - t0))" -v tb="$((tb1 - tb0))" \
        -v tt="$(awk -v a="$tt0" -v b="$tt1" 'BEGIN { print b - a }')" -v sb="${s1:-0}" -v sa="${s0:-0}" \
        -v st="$(awk -v a="${st0:-0}" -v b="${st1:-0}" 'BEGIN { print b - a }')" \
        -v c0="$c0" 'BEGIN { wall = ns / 1e9; cpu = k / hz
        mbps = (tt > 0 ? tb * 8 / 1e3 / tt : 0)                 # tap: bytes over its own clock (ms)
        own = (sb > sa && st > 0 ? (sb - sa) * 8 / 1e3 / st : 0) # the server side count
        printf "%.2f %.2f %.2f %.2f %.0f %+.2f\n", cpu / wall * 100, mbps, (mbps > 0 ? cpu * 1000 / (mbps * wall) : 0), own,
            c0 - cpu / wall * 100, (mbps > 0 ? (own - mbps) * 100 / mbps : 0) }')
    local cpu=$1 mbps=$2 msper=$3 own=$4 rest=$5 diff=$6 loss="n/a"
    if [[ $name == strom ]]; then
        [[ -n $l0 && -n $l1 ]] && loss="$((l1 - l0)) / $((d1 - d0))"
    else
        loss="n/a (sink rate $diff% vs tap)"
    fi
    NOISY=$(awk -v r="$rest" 'BEGIN { if (r > 10) printf "core 0 not quiet: %.0f%% other load", r }')
    local notes=${NOISY:-ok}
    awk -v m="$mbps" 'BEGIN { exit !(m < 1) }' && notes="FAIL: ingest only $mbps Mbit/s"
    awk -v c="$cpu" 'BEGIN { exit !(c >= 90) }' && { [[ $notes == ok ]] && notes="" || notes+="; "; notes+="server at ${cpu}% of its core: CPU-bound, the figure is capped"; }
    local label
    if [[ $name == strom ]]; then label="strom (SRT in, HLS out; $procs processes)"; else label="srt-live-transmit (SRT in, UDP out)"; fi
    ROW="| $label | $cpu | $mbps | $msper | $own | $loss | $c0 / $c1 | $rest | $notes |"
    printf -v "CPU_MS_PER_MBIT_$name" '%s' "$msper"
    printf -v "WIN_START_MS_$name" '%s' "$((t0 / 1000000))"
}

run_server() { # run_server NAME: fills ROW_<NAME>
    local name=$1 dir=$TMP/$1 try
    mkdir -p "$dir"
    wait_quiet
    log "$name: starting server and sender chain"
    "start_$name"
    start_chain "$name"
    wait_ready "$name"
    log "$name: receiving; warm-up ${WARMUP}s"
    sleep "$WARMUP"
    for ((try = 0; try <= RETRIES; try++)); do
        log "$name: CPU window ${DURATION}s"
        window "$name"
        [[ -n $NOISY && $try -lt $RETRIES ]] || break
        log "$name: window disturbed ($NOISY); again"
    done
    printf -v "ROW_$name" '%s' "$ROW"
    if [[ $name == strom ]]; then
        MEDIA_URL=$(media_url)
        [[ -n $MEDIA_URL ]] || die "strom: no media playlist after the window"
        log "strom: latency: waiting for $LATENCY_SEGMENTS new segments (poll every ${POLL_MS} ms)"
        local a; a=$(cores)
        taskset -c 1 python3 "$ROOT/bench/hls_serving/hlsbench.py" latency "$MEDIA_URL" "$LATENCY_SEGMENTS" \
            "$dir/tap-keys.log" --interval-ms "$POLL_MS" --timeout $((LATENCY_SEGMENTS * 3 + 30)) \
            >"$dir/latency.json" 2>"$dir/latency.err" || die "strom: latency probe failed: $(tail -2 "$dir/latency.err")"
        read -r LAT_C0 LAT_C1 < <(busy_between "$a" "$(cores)")
        chain_alive strom
        curl -sf "$MEDIA_URL" >"$dir/media-end.m3u8" || true
    else
        # Keyframes from 2 s after the sender started: the relay's transit, tap -> sink.
        python3 "$HERE/srtbench.py" transit "$dir/tap-keys.log" "$dir/sink-keys.log" "$((SENDER_START_MS + 2000))" \
            >"$dir/transit.json" || die "relay: transit failed"
    fi
    stop_all
    log "$name: done"
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "encoding the 60 s source clip"
ffmpeg -nostdin -loglevel error -y -f lavfi -i testsrc2=size=1280x720:rate=30 \
    -f lavfi -i sine=frequency=440:sample_rate=48000 -t 60 \
    -c:v libx264 -preset veryfast -g 30 -keyint_min 30 -sc_threshold 0 -pix_fmt yuv420p \
    -b:v 4000k -maxrate 4000k -bufsize 4000k -c:a aac -b:a 128k -f mpegts "$TMP/clip.ts" ||
    die "ffmpeg could not encode the source clip"
CLIP_MBPS=$(awk -v s="$(stat -c %s "$TMP/clip.ts")" 'BEGIN { printf "%.2f", s * 8 / 60 / 1e6 }')

SERVER_PID=0
for s in "${SERVERS[@]}"; do run_server "$s"; done

# Output (markdown).
echo "### SRT ingest (MPEG-TS over SRT in, HLS out)"
echo
printf '%s cores (%s), %s, load average before the run: %s. Source: 720p30 H.264 + AAC MPEG-TS, %s Mbit/s (file size / 60 s), 1 s GOP, looped by `ffmpeg -re -c copy` -> UDP -> tap -> `srt-live-transmit` caller (latency 120 ms) on core 1; server alone on core 0. CPU window %ss after %ss warm-up, no HLS client.\n' \
    "$(nproc)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "$(date -u '+%F %H:%M UTC')" \
    "$LOAD_BEFORE" "$CLIP_MBPS" "$DURATION" "$WARMUP"
echo
echo "| server | CPU % of a core | ingested Mbit/s | CPU ms per ingested Mbit | server's own count Mbit/s | SRT packets lost / dropped | core 0 / 1 busy % | core 0 not this server % | notes |"
echo "|---|---:|---:|---:|---:|---|---|---:|---|"
for s in "${SERVERS[@]}"; do v=ROW_$s; echo "${!v}"; done
if [[ $ONLY == both ]]; then
    echo
    awk -v s="${CPU_MS_PER_MBIT_strom:-0}" -v r="${CPU_MS_PER_MBIT_relay:-0}" 'BEGIN {
        printf "strom / srt-live-transmit, CPU ms per ingested Mbit: %s\n", (r > 0 ? sprintf("%.2f", s / r) : "n/a") }'
fi
echo
echo "Ingested Mbit/s: the bytes the tap passed to the caller. Server's own count: strom's libsrt \`bytesReceived\` (\`/manage/srt_receiver_stats\`) over the window; the relay's UDP sink."
echo
echo "| latency | samples | p50 ms | p95 ms | min ms | max ms | keyframe -> cut p50 / p95 ms | cut -> listed p50 / p95 ms |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|"
for s in "${SERVERS[@]}"; do
    if [[ $s == strom ]]; then
        f=$TMP/strom/latency.json
        k2c=$(json_get "$f" key_to_cut_ms.p50) c2l=$(json_get "$f" cut_to_listed_ms.p50)
        printf '| strom: keyframe at the tap -> segment listed in the HLS playlist (polled every %s ms) | %s | %s | %s | %s | %s | %s | %s |\n' \
            "$POLL_MS" "$(json_get "$f" segments)" "$(json_get "$f" latency_ms.p50)" "$(json_get "$f" latency_ms.p95)" \
            "$(json_get "$f" latency_ms.min)" "$(json_get "$f" latency_ms.max)" \
            "${k2c:+$k2c / $(json_get "$f" key_to_cut_ms.p95)}" "${c2l:+$c2l / $(json_get "$f" cut_to_listed_ms.p95)}"
    else
        f=$TMP/relay/transit.json
        printf '| srt-live-transmit: keyframe at the tap -> out of the relay (UDP sink) | %s | %s | %s | %s | %s | | |\n' \
            "$(json_get "$f" keyframes)" "$(json_get "$f" p50)" "$(json_get "$f" p95)" "$(json_get "$f" min)" "$(json_get "$f" max)"
    fi
done
if [[ -f $TMP/strom/media-sample.m3u8 ]]; then
    echo
    printf 'strom latency probe: core 0 / 1 busy %s%% / %s%%; segment durations (EXTINF) listed at the start: %s\n' "${LAT_C0:-?}" "${LAT_C1:-?}" \
        "$(grep '^#EXTINF' "$TMP/strom/media-sample.m3u8" | cut -d: -f2 | tr -d ',' | tr '\n' ' ')"
fi
echo
echo "Command: \`$CMDLINE\`"
