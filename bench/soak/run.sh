#!/usr/bin/env bash
# Soak (issue 22): strom under churn for --duration seconds (default one hour), sampling
# the resident memory and open descriptors of the supervisor and of every worker, to show
# that nothing grows without being released.
#
# The churn, all against one strom on loopback:
# - publishers: --publishers RTMP streams (an H.264 + AAC clip encoded once, played with
#   `ffmpeg -re -stream_loop -1 -c copy`, so encoders cost no CPU); every --cycle seconds
#   one of them (in turn) stops and a new one takes its name a few seconds later;
# - RTMP players: --players ffmpeg players (`-c copy -f null`), each leaving after a random
#   10-60 s and replaced by a new one on a random stream;
# - HLS viewers: --hls-viewers curl loops fetching the playlists and the newest segment
#   every second, each leaving after a random 20-90 s and replaced;
# - HTTP MPEG-TS viewers: --ts-viewers `curl .../mpegts.stream` for a random 10-40 s each;
# - every 300 s a configuration reload (`POST /manage/reload_config`) and every 600 s a
#   `kill -9` of one worker (rtmp, packager, ingest, dvr in turn), which the supervisor
#   restarts.
#
# Sampling: every --sample seconds, for the supervisor and each worker (children of the
# supervisor named strom-<kind>): VmRSS from /proc/PID/status and the entries of
# /proc/PID/fd; written to samples.csv (time_s,process,pid,rss_kb,fds). The report
# (markdown on stdout) gives per process the value after --warmup seconds, the last value,
# the maximum, and the least-squares slope over the window after warm-up, for the samples
# of one process life (a killed worker's successor starts a new life: the slope is per
# life, the last life is reported).
#
#   bash bench/soak/run.sh [--duration 3600] [--warmup 300] [--sample 10] [--publishers 3]
#                          [--players 8] [--hls-viewers 8] [--ts-viewers 4] [--cycle 60]
#                          [--strom-bin PATH] [--keep]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CMDLINE="bash bench/soak/run.sh${*:+ $*}"
DURATION=3600
WARMUP=300
SAMPLE=10
PUBLISHERS=3
PLAYERS=8
HLS_VIEWERS=8
TS_VIEWERS=4
CYCLE=60
STROM_BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/strom
KEEP=0

while (($#)); do
    case $1 in
        --duration) DURATION=$2; shift ;;
        --warmup) WARMUP=$2; shift ;;
        --sample) SAMPLE=$2; shift ;;
        --publishers) PUBLISHERS=$2; shift ;;
        --players) PLAYERS=$2; shift ;;
        --hls-viewers) HLS_VIEWERS=$2; shift ;;
        --ts-viewers) TS_VIEWERS=$2; shift ;;
        --cycle) CYCLE=$2; shift ;;
        --strom-bin) STROM_BIN=$2; shift ;;
        --keep) KEEP=1 ;;
        -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

for tool in ffmpeg curl awk; do
    command -v "$tool" >/dev/null || { echo "soak: $tool missing (Debian package ${tool/awk/gawk})" >&2; exit 2; }
done
[ -x "$STROM_BIN" ] || { echo "soak: no strom binary at $STROM_BIN (cargo build --release -p strom)" >&2; exit 2; }

COMMIT=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
WORK=$(mktemp -d /tmp/strom-soak.XXXXXX)
log() { echo "soak[$(date +%H:%M:%S)]: $*" >&2; }
cleanup() {
    set +e
    pkill -P $$ >/dev/null 2>&1
    jobs -p | xargs -r kill >/dev/null 2>&1
    [ -n "${STROM_PID:-}" ] && kill "$STROM_PID" >/dev/null 2>&1 && wait "$STROM_PID" 2>/dev/null
    if [ "$KEEP" = 1 ]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
RTMP_PORT=$(free_port); HTTP_PORT=$(free_port); API_PORT=$(free_port)
API=http://127.0.0.1:$API_PORT/manage

cat >"$WORK/strom.conf" <<EOF
listen_interfaces = 127.0.0.1
port = $HTTP_PORT
management_listen_interfaces = 127.0.0.1
management_port = $API_PORT
rules_path = rules.conf
data_dir = $WORK/data
run_dir = $WORK/run
logging = info
EOF
cat >"$WORK/rules.conf" <<EOF
{"RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": $RTMP_PORT}]},
 "Delivery": {"outputs": ["HLS", "MPEGTS", "ICECAST"], "segment_duration_secs": 2}}
EOF

log "encoding the clip"
ffmpeg -hide_banner -loglevel error -y -f lavfi -i testsrc=size=640x360:rate=25 \
    -f lavfi -i sine=frequency=440:sample_rate=44100 -t 20 \
    -c:v libx264 -preset veryfast -g 50 -pix_fmt yuv420p -b:v 800k \
    -c:a aac -b:a 96k -f flv "$WORK/clip.flv"

"$STROM_BIN" run --config "$WORK/strom.conf" >"$WORK/strom.log" 2>&1 &
STROM_PID=$!
for _ in $(seq 1 100); do
    curl -sf "$API/server_status" >/dev/null 2>&1 && break
    sleep 0.2
done
log "strom $STROM_PID: rtmp $RTMP_PORT, http $HTTP_PORT, api $API_PORT; $DURATION s"

START=$(date +%s)
elapsed() { echo $(($(date +%s) - START)); }
running() { [ "$(elapsed)" -lt "$DURATION" ]; }

publish() { # stream name
    ffmpeg -hide_banner -loglevel quiet -re -stream_loop -1 -i "$WORK/clip.flv" -c copy \
        -f flv "rtmp://127.0.0.1:$RTMP_PORT/live/$1" </dev/null >/dev/null 2>&1 &
    echo $!
}

publishers_loop() {
    local pids=() i=0
    for n in $(seq 0 $((PUBLISHERS - 1))); do pids[n]=$(publish "s$n"); done
    while running; do
        sleep "$CYCLE"
        kill "${pids[i]}" 2>/dev/null || true
        sleep 3
        pids[i]=$(publish "s$i")
        i=$(((i + 1) % PUBLISHERS))
    done
    kill "${pids[@]}" 2>/dev/null || true
}

player_loop() {
    while running; do
        timeout $((10 + RANDOM % 50)) ffmpeg -hide_banner -loglevel quiet \
            -i "rtmp://127.0.0.1:$RTMP_PORT/live/s$((RANDOM % PUBLISHERS))" -c copy -f null - \
            </dev/null >/dev/null 2>&1 || sleep 1
    done
}

hls_viewer_loop() {
    while running; do
        local base="http://127.0.0.1:$HTTP_PORT/live/s$((RANDOM % PUBLISHERS))"
        local until=$(($(date +%s) + 20 + RANDOM % 70))
        local chunks
        chunks=$(curl -s --max-time 5 "$base/playlist.m3u8" | grep -v '^#' | head -n 1)
        while [ "$(date +%s)" -lt "$until" ] && running; do
            if [ -n "$chunks" ]; then
                local segment
                segment=$(curl -s --max-time 5 "$base/$chunks" | grep -v '^#' | tail -n 1)
                [ -n "$segment" ] && curl -s --max-time 5 -o /dev/null "$base/$segment"
            fi
            sleep 1
        done
    done
}

ts_viewer_loop() {
    while running; do
        curl -s --max-time $((10 + RANDOM % 30)) -o /dev/null \
            "http://127.0.0.1:$HTTP_PORT/live/s$((RANDOM % PUBLISHERS))/mpegts.stream" || true
        sleep 1
    done
}

operator_loop() {
    local kinds=(rtmp packager ingest dvr) k=0
    while running; do
        sleep 60
        local t
        t=$(elapsed)
        if [ $((t / 60 % 5)) -eq 0 ]; then
            curl -s -X POST "$API/reload_config" >/dev/null && log "reload at ${t}s"
        fi
        if [ $((t / 60 % 10)) -eq 0 ]; then
            local pid
            pid=$(worker_pid "${kinds[k]}")
            if [ -n "$pid" ]; then
                kill -9 "$pid" && log "kill -9 ${kinds[k]} ($pid) at ${t}s"
                echo "$t,kill,${kinds[k]},$pid" >>"$WORK/events.csv"
            fi
            k=$(((k + 1) % ${#kinds[@]}))
        fi
    done
}

# Worker processes are children of the supervisor, named strom-<kind> (/proc/PID/comm).
worker_pid() {
    local child
    for child in $(cat /proc/"$STROM_PID"/task/*/children 2>/dev/null); do
        if [ "$(cat /proc/"$child"/comm 2>/dev/null)" = "strom-$1" ]; then
            echo "$child"
            return
        fi
    done
}

sampler_loop() {
    echo "time_s,process,pid,rss_kb,fds" >"$WORK/samples.csv"
    while running; do
        local t
        t=$(elapsed)
        for kind in supervisor rtmp packager ingest dvr; do
            local pid
            if [ "$kind" = supervisor ]; then pid=$STROM_PID; else pid=$(worker_pid "$kind"); fi
            [ -n "$pid" ] || continue
            local rss fds
            rss=$(awk '/^VmRSS:/ {print $2}' /proc/"$pid"/status 2>/dev/null || true)
            fds=$(find /proc/"$pid"/fd -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
            [ -n "$rss" ] && echo "$t,$kind,$pid,$rss,$fds" >>"$WORK/samples.csv"
        done
        sleep "$SAMPLE"
    done
}

publishers_loop &
sleep 5
for _ in $(seq 1 "$PLAYERS"); do player_loop & done
for _ in $(seq 1 "$HLS_VIEWERS"); do hls_viewer_loop & done
for _ in $(seq 1 "$TS_VIEWERS"); do ts_viewer_loop & done
operator_loop &
sampler_loop &
SAMPLER=$!
wait "$SAMPLER"
sleep 2
kill -0 "$STROM_PID" 2>/dev/null || { echo "soak: strom exited early; log:" >&2; tail -50 "$WORK/strom.log" >&2; exit 1; }
cp "$WORK/samples.csv" "${SOAK_SAMPLES_OUT:-/dev/null}" 2>/dev/null || true

starts=$(grep -c "strom-supervisor worker ready" "$WORK/strom.log" || true)
panics=$(grep -ci "panicked" "$WORK/strom.log" || true)
echo "## Soak: $DURATION s of churn"
echo
echo "Command: \`$CMDLINE\` (checkout $COMMIT, binary $STROM_BIN, $(nproc) cores)."
echo "Publishers $PUBLISHERS (one restarted every $CYCLE s), RTMP players $PLAYERS, HLS viewers $HLS_VIEWERS,"
echo "MPEG-TS viewers $TS_VIEWERS, reload every 300 s, kill -9 of a worker every 600 s."
echo "Worker starts logged: $starts (4 at start, one per kill after); panics logged: $panics."
echo
echo "One row per process life (a killed worker's successor is a new life)."
echo
echo "| process | life | RSS after warm-up (KiB) | RSS last | RSS max | RSS slope after warm-up (KiB/h) | fds after warm-up | fds last | fds max | fd slope (/h) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
awk -F, -v warmup="$WARMUP" 'NR > 1 {
    p = $3
    if (!(p in kind)) {
        kind[p] = $2; lives[$2]++; from[p] = $1; order[++count] = p
        # The first life warms up for --warmup seconds, a restarted worker for a fifth of it.
        settled[p] = lives[$2] == 1 ? warmup : $1 + warmup / 5
    }
    to[p] = $1; lastr[p] = $4; lastf[p] = $5
    if ($4 > maxr[p]) maxr[p] = $4; if ($5 > maxf[p]) maxf[p] = $5
    if ($1 >= settled[p]) {
        if (!(p in wr)) { wr[p] = $4; wf[p] = $5 }
        n[p]++; sx[p] += $1; sy[p] += $4; sxx[p] += $1 * $1; sxy[p] += $1 * $4; fy[p] += $5; fxy[p] += $1 * $5
    }
} END {
    for (i = 1; i <= count; i++) { p = order[i]
        slope = "n/a"; fslope = "n/a"
        d = n[p] * sxx[p] - sx[p] * sx[p]
        if (n[p] > 2 && d > 0) { slope = sprintf("%.0f", 3600 * (n[p] * sxy[p] - sx[p] * sy[p]) / d); fslope = sprintf("%.1f", 3600 * (n[p] * fxy[p] - sx[p] * fy[p]) / d) }
        printf "| %s | %s-%s s | %s | %s | %s | %s | %s | %s | %s | %s |\n", kind[p], from[p], to[p], wr[p], lastr[p], maxr[p], slope, wf[p], lastf[p], maxf[p], fslope
    }
}' "$WORK/samples.csv"
