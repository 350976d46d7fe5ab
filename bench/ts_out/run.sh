#!/usr/bin/env bash
# MPEG-TS output fan-out benchmark (issue 10): strom's CPU per SRT caller and per HTTP-TS
# viewer, and srt-live-transmit serving the same SRT fan-out, in one run.
#
# A 720p30 H.264 + AAC clip (~4 Mbit/s video, a keyframe every 1 s, 60 s) is encoded once
# (MPEG-TS, remuxed once to FLV for RTMP) and played in a loop by
# `ffmpeg -re -stream_loop -1 -c copy`. The server runs alone on
# core 0 (strom's supervisor and every worker inherit the pinning); the source, the fan-out
# helper and every client on core 1.
#
# 1. SRT fan-out. strom: the clip published over RTMP (strom remuxes it to TS), a TsOutputs
#    SRT listener (max_callers 1000, latency 120), `Delivery.outputs` [] (no HLS); N
#    `srt-live-transmit` callers (streamid=#!::r=live/bench,m=request, latency 120) write
#    to /dev/null and log libsrt's receive counters (-statsout, CSV). Before the callers,
#    a window with no caller (RTMP ingest only). Peer: srt-live-transmit serves one caller
#    per listener, so N of them (`udp://127.0.0.1:Pi` -> `srt://:Qi?mode=listener&latency=120`)
#    on core 0, fed the clip as MPEG-TS over UDP by ffmpeg through tsbench.py fanout (one
#    copy of each datagram per listener, on core 1), each with one caller as above.
#    Peer CPU = the sum over the N listeners.
# 2. HTTP-TS fan-out (strom alone): the same RTMP publish, `Delivery.outputs` ["MPEGTS"],
#    N `curl -s -o /dev/null .../live/bench/mpegts.stream` viewers (at most 50 per client
#    address: 127.0.0.2, .3, ...; strom caps 64 per address).
#
# CPU: utime+stime (from /proc) of the server's process tree(s) over --duration seconds
# after --warmup seconds with all clients connected. Delivered rate per client: SRT from the
# callers' own counters (payload bytes) over the window; HTTP from strom's /manage/sessions
# bytes_sent over the window, plus each curl's own count over its whole life. Before each
# server the script waits for the cores to be free of other load. Traffic stays on
# 127.0.0.0/8; nothing is installed; results go to stdout (markdown), progress to stderr.
#
#   bash bench/ts_out/run.sh [--srt-callers 10,50] [--http-viewers 50,200] [--only srt|http]
#                            [--duration 20] [--warmup 10]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/bench/ts_out
CMDLINE="bash bench/ts_out/run.sh${*:+ $*}"
ONLY=both
SRT_NS=10,50
HTTP_NS=50,200
DURATION=20
WARMUP=10
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
STROM_BIN=$TARGET_DIR/release/strom
BUILD=1
KEEP=0
QUIET_WAIT=120
PER_ADDR=50

usage() { sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; cat <<EOF
options: --only srt|http|both ($ONLY)  --srt-callers LIST ($SRT_NS)  --http-viewers LIST ($HTTP_NS)
         --duration SECS ($DURATION)  --warmup SECS ($WARMUP)  --strom-bin PATH ($STROM_BIN)
         --quiet-wait SECS ($QUIET_WAIT)  --no-build  --keep (keep the temp dir)
ports: a random free block of high ports (TCP and UDP), printed on stderr
EOF
}

while (($#)); do
    case $1 in
        --only) ONLY=$2; shift ;;
        --srt-callers) SRT_NS=$2; shift ;;
        --http-viewers) HTTP_NS=$2; shift ;;
        --duration) DURATION=$2; shift ;;
        --warmup) WARMUP=$2; shift ;;
        --strom-bin) STROM_BIN=$2; shift ;;
        --quiet-wait) QUIET_WAIT=$2; shift ;;
        --no-build) BUILD=0 ;;
        --keep) KEEP=1 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
case $ONLY in srt|http|both) ;; *) echo "--only takes srt, http or both" >&2; exit 2 ;; esac
IFS=, read -r -a SRT_LIST <<<"$SRT_NS"
IFS=, read -r -a HTTP_LIST <<<"$HTTP_NS"

die() { echo "run.sh: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || die "$1 not found: install the Debian package $2"; }
need ffmpeg ffmpeg
need srt-live-transmit srt-tools
need taskset util-linux
need curl curl
need python3 python3
(($(nproc) >= 2)) || die "needs 2 cores (server on core 0, everything else on core 1)"

if ((BUILD)); then
    (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR cargo build --release -p strom) >&2
fi
[[ -x $STROM_BIN ]] || die "$STROM_BIN missing (cargo build --release -p strom)"

MAXN=1
for n in "${SRT_LIST[@]}"; do ((n > MAXN)) && MAXN=$n; done

# A block of 10 + 2 * MAXN consecutive ports free for both TCP and UDP on 127.0.0.1.
BASE=$(python3 - "$((10 + 2 * MAXN))" <<'EOF'
import random, socket, sys
size = int(sys.argv[1])
for _ in range(200):
    base = random.randrange(20000, 60000 - size)
    ok = True
    for p in range(base, base + size):
        for kind in (socket.SOCK_STREAM, socket.SOCK_DGRAM):
            s = socket.socket(socket.AF_INET, kind)
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                ok = False
            finally:
                s.close()
            if not ok:
                break
        if not ok:
            break
    if ok:
        print(base)
        sys.exit(0)
sys.exit("no free port block")
EOF
) || die "no free block of ports"
HTTP_PORT=$BASE MGMT_PORT=$((BASE + 1)) RTMP_PORT=$((BASE + 2)) SRT_PORT=$((BASE + 3)) FAN_PORT=$((BASE + 4))
PEER_IN=$((BASE + 10)) PEER_OUT=$((BASE + 10 + MAXN))

TMP=$(mktemp -d /tmp/ts-out.XXXXXX)
PIDS=()
stop_pids() { # stop_pids PID...: end these (our own) processes and reap them
    local p
    for p in "$@"; do kill "$p" 2>/dev/null || true; done
    for p in "$@"; do wait "$p" 2>/dev/null || true; done
}
stop_all() { # ends this script's own background processes, newest first
    local i rev=()
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do rev+=("${PIDS[i]}"); done
    ((${#rev[@]})) && stop_pids "${rev[@]}"
    PIDS=()
}
cleanup() {
    stop_all
    if ((KEEP)); then echo "clip, configs, logs and results kept in $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "[$(date +%T)] $*" >&2; }
log "ports: http $HTTP_PORT, management $MGMT_PORT, rtmp $RTMP_PORT, srt out $SRT_PORT, fan-out in $FAN_PORT, peer udp in $PEER_IN.., peer srt $PEER_OUT.."
HZ=$(getconf CLK_TCK)
now_ms() { date +%s%3N; }

# ticks PID...: utime+stime (clock ticks) of these PIDs and all their descendants.
ticks() {
    local f line
    for f in /proc/[0-9]*/stat; do
        if read -r line 2>/dev/null <"$f"; then echo "${line%% *} ${line##*) }"; fi
    done | awk -v roots="$*" '{ ppid[$1] = $3; t[$1] = $13 + $14 }
        END { n = split(roots, r, " "); for (i = 1; i <= n; i++) keep[r[i]] = 1
              n = 1
              while (n) { n = 0; for (p in ppid) if (!(p in keep) && (ppid[p] in keep)) { keep[p] = 1; n = 1 } }
              s = 0; for (p in keep) s += t[p]; print s }'
}
tree_count() { echo $((1 + $(pgrep -P "$1" | wc -l))); }
cores() { grep -E '^cpu[01] ' /proc/stat | tr '\n' ' '; }
busy_between() { # busy_between "$(cores)" "$(cores)": "core0% core1%"
    awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " ")
        for (c = 0; c < 2; c++) { o = c * 11
            b1 = x[o+2]+x[o+3]+x[o+4]+x[o+7]+x[o+8]+x[o+9]; t1 = b1+x[o+5]+x[o+6]
            b2 = y[o+2]+y[o+3]+y[o+4]+y[o+7]+y[o+8]+y[o+9]; t2 = b2+y[o+5]+y[o+6]
            printf "%.0f ", (t2 > t1 ? (b2-b1)*100/(t2-t1) : 0) } print "" }'
}
wait_quiet() { # until core 0 < 10% and core 1 < 25% busy, or QUIET_WAIT
    local t=0 a c0 c1
    while :; do
        a=$(cores); sleep 2; read -r c0 c1 < <(busy_between "$a" "$(cores)")
        ((c0 < 10 && c1 < 25)) && return 0
        ((t == 0)) && log "cores busy (core 0 ${c0}%, core 1 ${c1}%): waiting up to ${QUIET_WAIT}s"
        ((t += 2, t >= QUIET_WAIT)) && { log "still busy; measuring anyway"; return 0; }
    done
}
alive() { kill -0 "$1" 2>/dev/null; }
jget() { python3 -c 'import json,sys
v = json.loads(sys.argv[1])
for k in sys.argv[2].split("."):
    v = v.get(k) if isinstance(v, dict) else None
print("" if v is None else (",".join(map(str, v)) if isinstance(v, list) else v))' "$@" 2>/dev/null || true; }

# start_strom OUTPUTS_JSON WITH_SRT_OUT(0|1)
start_strom() {
    local dir=$TMP/strom-$3 tsout=""
    mkdir -p "$dir"
    cat >"$dir/strom.conf" <<EOF
listen_interfaces = 127.0.0.1
port = $HTTP_PORT
management_listen_interfaces = 127.0.0.1
management_port = $MGMT_PORT
rules_path = rules.conf
data_dir = data
run_dir = run
logging = warn
EOF
    (($2)) && tsout=',
  "TsOutputs": [{
    "id": "fan", "protocol": "srt", "mode": "listen", "ip": "127.0.0.1", "port": '$SRT_PORT',
    "parameters": [{ "name": "max_callers", "value": "1000" }, { "name": "latency", "value": "120" }]
  }]'
    cat >"$dir/rules.conf" <<EOF
{
  "RtmpSettings": {
    "interfaces": [{ "ip": "127.0.0.1", "port": $RTMP_PORT }]
  },
  "Delivery": { "outputs": $1 }$tsout
}
EOF
    taskset -c 0 "$STROM_BIN" run --config "$dir/strom.conf" >"$dir/server.log" 2>&1 &
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
    STROM_DIR=$dir
    for _ in $(seq 100); do
        curl -sf "http://127.0.0.1:$MGMT_PORT/manage/server_status" >/dev/null 2>&1 && break
        alive "$SERVER_PID" || die "strom exited: $(tail -5 "$dir/server.log")"
        sleep 0.2
    done
    taskset -c 1 ffmpeg -nostdin -loglevel warning -re -stream_loop -1 -i "$TMP/clip.flv" -c copy \
        -f flv "rtmp://127.0.0.1:$RTMP_PORT/live/bench" >"$dir/ffmpeg.log" 2>&1 &
    SENDER_PID=$!
    PIDS+=("$SENDER_PID")
    for _ in $(seq 100); do
        curl -sf "http://127.0.0.1:$MGMT_PORT/manage/rtmp_status" 2>/dev/null | grep -q '"bench"' && return 0
        alive "$SENDER_PID" || die "ffmpeg publisher exited: $(tail -3 "$dir/ffmpeg.log")"
        sleep 0.2
    done
    die "stream live/bench not published after 20 s: $(tail -3 "$dir/ffmpeg.log" "$dir/server.log")"
}

# srt_caller DIR I URL: one srt-live-transmit caller on core 1 to /dev/null, stats to DIR/cI.csv
srt_caller() {
    taskset -c 1 srt-live-transmit -a:no -s:100 -f -pf:csv -statsout:"$1/c$2.csv" "$3" file://con \
        >/dev/null 2>"$1/c$2.log" &
    CALLERS+=($!)
    PIDS+=($!)
}

# window LABEL ROOT_PIDS...: one CPU window over ROOT_PIDS' trees; sets W_CPU, W_C0, W_C1,
# W_T0, W_T1 (ms) and W_REST (core 0 busy % not from ROOT_PIDS).
window() {
    local a b k0 k1 t0 t1
    log "$1: CPU window ${DURATION}s"
    a=$(cores); t0=$(date +%s%N); k0=$(ticks "${@:2}")
    [[ -n ${SNAP:-} ]] && curl -sf "http://127.0.0.1:$MGMT_PORT/manage/sessions" >"$SNAP.0.json" 2>/dev/null || true
    sleep "$DURATION"
    [[ -n ${SNAP:-} ]] && curl -sf "http://127.0.0.1:$MGMT_PORT/manage/sessions" >"$SNAP.1.json" 2>/dev/null || true
    k1=$(ticks "${@:2}"); t1=$(date +%s%N); b=$(cores)
    read -r W_C0 W_C1 < <(busy_between "$a" "$b")
    W_T0=$((t0 / 1000000)) W_T1=$((t1 / 1000000))
    W_SECS=$(awk -v ns="$((t1 - t0))" 'BEGIN { printf "%.3f", ns / 1e9 }')
    W_CPU=$(awk -v k="$((k1 - k0))" -v hz="$HZ" -v s="$W_SECS" 'BEGIN { printf "%.2f", k / hz / s * 100 }')
    W_REST=$(awk -v c="$W_C0" -v u="$W_CPU" 'BEGIN { printf "%.0f", c - u }')
}

RETRIES=2 # repeat a window that other load on core 0 disturbed (> 10% of core 0 not ours)
measure() { # measure LABEL ROOT_PIDS...: window, repeated up to RETRIES times while disturbed
    local try
    for ((try = 0; try <= RETRIES; try++)); do
        window "$@"
        awk -v r="$W_REST" 'BEGIN { exit !(r > 10) }' || return 0
        ((try < RETRIES)) && log "$1: window disturbed (core 0: ${W_REST}% other load); again"
    done
    return 0
}

note_for() { # note_for CPU REST: the notes column
    local n=""
    awk -v r="$2" 'BEGIN { exit !(r > 10) }' && n="core 0 not quiet: $2% other load"
    awk -v c="$1" 'BEGIN { exit !(c >= 90) }' && n="${n:+$n; }server at $1% of its core: CPU-bound"
    echo "${n:-ok}"
}

SRT_ROWS=() HTTP_ROWS=() RATIO_ROWS=()

run_strom_srt() {
    local n dir url rate
    wait_quiet
    log "strom SRT: starting strom (TsOutputs SRT listener, Delivery.outputs []) and the RTMP publisher"
    start_strom '[]' 1 srt
    sleep "$WARMUP"
    SNAP="" measure "strom, no caller" "$SERVER_PID"
    SRT_ROWS+=("| strom, no caller (RTMP ingest only; $(tree_count "$SERVER_PID") processes) | 0 | $W_CPU | | | | | $W_C0 / $W_C1 | $W_REST | $(note_for "$W_CPU" "$W_REST") |")
    STROM_IDLE_CPU=$W_CPU
    for n in "${SRT_LIST[@]}"; do
        dir=$TMP/strom-srt/n$n; mkdir -p "$dir"
        CALLERS=()
        url="srt://127.0.0.1:$SRT_PORT?streamid=#!::r=live/bench,m=request&latency=120"
        log "strom SRT: $n callers"
        for ((i = 0; i < n; i++)); do srt_caller "$dir" "$i" "$url"; done
        sleep "$WARMUP"
        SNAP=$dir/sessions measure "strom, $n SRT callers" "$SERVER_PID"
        alive "$SERVER_PID" || die "strom exited: $(tail -5 "$STROM_DIR/server.log")"
        rate=$(python3 "$HERE/tsbench.py" srtrate "$W_T0" "$W_T1" "$dir"/c*.csv)
        echo "$rate" >"$dir/rate.json"
        local srv; srv=$(python3 "$HERE/tsbench.py" sessions "$dir/sessions.0.json" "$dir/sessions.1.json" SRT "$W_SECS")
        echo "$srv" >"$dir/server-rate.json"
        srt_row "strom ($(tree_count "$SERVER_PID") processes)" "$n" "$rate" "$(jget "$srv" mbps.median)"
        printf -v "STROM_SRT_$n" '%s' "$W_CPU"
        stop_pids "${CALLERS[@]}"
        sleep 1
    done
    stop_all
}

# srt_row LABEL N RATE_JSON SERVER_MEDIAN
srt_row() {
    local label=$1 n=$2 rate=$3 recv per ms note
    recv=$(jget "$rate" receiving)
    per=$(awk -v c="$W_CPU" -v n="$n" 'BEGIN { printf "%.3f", c / n }')
    ms=$(awk -v c="$W_CPU" -v n="$n" 'BEGIN { printf "%.2f", c * 10 / n }') # CPU ms per viewer-second
    note=$(note_for "$W_CPU" "$W_REST")
    ((recv < n)) && note="$note; $((n - recv)) callers received nothing: $(jget "$rate" silent)"
    local lost; lost="$(jget "$rate" lost_pkts) / $(jget "$rate" dropped_pkts)"
    SRT_ROWS+=("| $label | $n ($recv receiving) | $W_CPU | $per | $ms | $(jget "$rate" mbps.median) ($(jget "$rate" mbps.min)–$(jget "$rate" mbps.max)) | ${4:-n/a} | $W_C0 / $W_C1 | $W_REST | $note; lost / dropped pkts at callers $lost |")
}

run_peer_srt() {
    local n dir i ports
    for n in "${SRT_LIST[@]}"; do
        wait_quiet
        dir=$TMP/peer/n$n; mkdir -p "$dir"
        log "peer: $n srt-live-transmit listeners fed by ffmpeg -> UDP -> fan-out"
        ports=""
        local LISTENERS=()
        for ((i = 0; i < n; i++)); do
            taskset -c 0 srt-live-transmit -a:no "udp://127.0.0.1:$((PEER_IN + i))" \
                "srt://:$((PEER_OUT + i))?mode=listener&latency=120" >"$dir/l$i.log" 2>&1 &
            LISTENERS+=($!); PIDS+=($!)
            ports+="${ports:+,}$((PEER_IN + i))"
        done
        taskset -c 1 python3 "$HERE/tsbench.py" fanout "$FAN_PORT" "$ports" "$dir/fan.count" 2>"$dir/fan.log" &
        PIDS+=($!)
        sleep 0.5
        CALLERS=()
        for ((i = 0; i < n; i++)); do srt_caller "$dir" "$i" "srt://127.0.0.1:$((PEER_OUT + i))?latency=120"; done
        sleep 0.5
        taskset -c 1 ffmpeg -nostdin -loglevel warning -re -stream_loop -1 -i "$TMP/clip.ts" -c copy \
            -f mpegts "udp://127.0.0.1:$FAN_PORT?pkt_size=1316" >"$dir/ffmpeg.log" 2>&1 &
        PIDS+=($!)
        sleep "$WARMUP"
        SNAP="" measure "peer, $n callers" "${LISTENERS[@]}"
        local dead=0; for p in "${LISTENERS[@]}"; do alive "$p" || ((dead += 1)); done
        rate=$(python3 "$HERE/tsbench.py" srtrate "$W_T0" "$W_T1" "$dir"/c*.csv)
        echo "$rate" >"$dir/rate.json"
        srt_row "srt-live-transmit × $n (one listener per caller)" "$n" "$rate" "n/a"
        ((dead)) && SRT_ROWS[-1]="${SRT_ROWS[-1]% |}; $dead listeners exited |"
        printf -v "PEER_SRT_$n" '%s' "$W_CPU"
        stop_all
        sleep 1
    done
}

run_strom_http() {
    local n dir i addr
    wait_quiet
    log "strom HTTP: starting strom (Delivery.outputs [\"MPEGTS\"]) and the RTMP publisher"
    start_strom '["MPEGTS"]' 0 http
    sleep "$WARMUP"
    SNAP="" measure "strom HTTP, no viewer" "$SERVER_PID"
    HTTP_ROWS+=("| 0 | $W_CPU | | | | | $W_C0 / $W_C1 | $W_REST | $(note_for "$W_CPU" "$W_REST") |")
    HTTP_IDLE_CPU=$W_CPU
    for n in "${HTTP_LIST[@]}"; do
        dir=$TMP/strom-http/n$n; mkdir -p "$dir"
        local VIEWERS=()
        log "strom HTTP: $n viewers"
        for ((i = 0; i < n; i++)); do
            addr=127.0.0.$((2 + i / PER_ADDR))
            taskset -c 1 curl -s -o /dev/null --interface "$addr" --max-time $((WARMUP + (RETRIES + 1) * (DURATION + 3) + 5)) \
                -w '%{http_code} %{size_download} %{time_total}\n' \
                "http://127.0.0.1:$HTTP_PORT/live/bench/mpegts.stream" >"$dir/v$i.out" 2>/dev/null &
            VIEWERS+=($!); PIDS+=($!)
        done
        sleep "$WARMUP"
        SNAP=$dir/sessions measure "strom HTTP, $n viewers" "$SERVER_PID"
        alive "$SERVER_PID" || die "strom exited: $(tail -5 "$STROM_DIR/server.log")"
        for p in "${VIEWERS[@]}"; do wait "$p" 2>/dev/null || true; done # they end on --max-time (room for the retries)
        local srv cl
        srv=$(python3 "$HERE/tsbench.py" sessions "$dir/sessions.0.json" "$dir/sessions.1.json" MPEGTS "$W_SECS")
        cl=$(python3 "$HERE/tsbench.py" curlrate "$dir"/v*.out)
        echo "$srv" >"$dir/server-rate.json"; echo "$cl" >"$dir/curl.json"
        local both recv per vpc note
        both=$(jget "$srv" both); recv=$(jget "$cl" receiving)
        per=$(awk -v c="$W_CPU" -v n="$n" 'BEGIN { printf "%.2f", c * 10 / n }')
        vpc=$(awk -v c="$W_CPU" -v n="$n" 'BEGIN { printf "%.0f", (c > 0 ? n / (c / 100) : 0) }')
        note=$(note_for "$W_CPU" "$W_REST")
        ((recv < n)) && note="$note; $((n - recv)) viewers received nothing"
        note="$note; curl exit codes: $(jget "$cl" codes | tr -d '{}"')"
        printf -v "HTTP_CPU_$n" '%s' "$W_CPU"
        HTTP_ROWS+=("| $n ($both sessions in the window, $recv curls received) | $W_CPU | $per | $(jget "$srv" mbps.median) ($(jget "$srv" mbps.min)–$(jget "$srv" mbps.max)) | $(jget "$cl" mbps.median) | $vpc | $W_C0 / $W_C1 | $W_REST | $note |")
        sleep 1
    done
    stop_all
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "load average before the run: $LOAD_BEFORE"
log "encoding the 60 s source clip"
ffmpeg -nostdin -loglevel error -y -f lavfi -i testsrc2=size=1280x720:rate=30 \
    -f lavfi -i sine=frequency=440:sample_rate=48000 -t 60 \
    -c:v libx264 -preset veryfast -g 30 -keyint_min 30 -sc_threshold 0 -pix_fmt yuv420p \
    -b:v 4000k -maxrate 4000k -bufsize 4000k -c:a aac -b:a 128k -f mpegts "$TMP/clip.ts" ||
    die "ffmpeg could not encode the source clip"
# The same packets in FLV for the RTMP publisher (an explicit aac_adtstoasc on a looped TS
# input stops the audio after the first loop in ffmpeg 5.1).
ffmpeg -nostdin -loglevel error -y -i "$TMP/clip.ts" -c copy -bsf:a aac_adtstoasc -f flv "$TMP/clip.flv" ||
    die "ffmpeg could not remux the clip to FLV"
CLIP_MBPS=$(awk -v s="$(stat -c %s "$TMP/clip.ts")" 'BEGIN { printf "%.2f", s * 8 / 60 / 1e6 }')
SERVER_PID=0

if [[ $ONLY != http ]]; then run_strom_srt; run_peer_srt; fi
if [[ $ONLY != srt ]]; then run_strom_http; fi
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

echo "### MPEG-TS out: SRT and HTTP fan-out"
echo
printf '%s cores (%s), %s, load average before / after the run: %s / %s. Source: 720p30 H.264 + AAC, %s Mbit/s as MPEG-TS (file size / 60 s), 1 s GOP, looped by `ffmpeg -re -stream_loop -1 -c copy` on core 1; server alone on core 0, every client on core 1. CPU window %ss after %ss warm-up with the clients connected.\n' \
    "$(nproc)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "$(date -u '+%F %H:%M UTC')" \
    "$LOAD_BEFORE" "$LOAD_AFTER" "$CLIP_MBPS" "$DURATION" "$WARMUP"
if [[ $ONLY != http ]]; then
    echo
    echo "SRT fan-out (strom: RTMP in, TsOutputs SRT listener; peer: N srt-live-transmit UDP -> SRT listeners fed by one UDP fan-out; callers: srt-live-transmit to /dev/null)"
    echo
    echo "| server | callers | CPU % of a core | CPU % per caller | CPU ms per caller-second | delivered Mbit/s per caller, median (min–max), callers' count | strom's count (bytes_sent) median Mbit/s | core 0 / 1 busy % | core 0 not this server % | notes |"
    echo "|---|---:|---:|---:|---:|---|---:|---|---:|---|"
    printf '%s\n' "${SRT_ROWS[@]}"
    echo
    for n in "${SRT_LIST[@]}"; do
        s=STROM_SRT_$n p=PEER_SRT_$n
        awk -v n="$n" -v s="${!s:-0}" -v p="${!p:-0}" -v i="${STROM_IDLE_CPU:-0}" 'BEGIN {
            printf "- %s callers: strom / srt-live-transmit CPU = %s; strom above its no-caller ingest (%.2f%%) / srt-live-transmit = %s\n", n,
                (p > 0 ? sprintf("%.2f", s / p) : "n/a"), i, (p > 0 ? sprintf("%.2f", (s - i) / p) : "n/a") }'
    done
fi
if [[ $ONLY != srt ]]; then
    echo
    echo "HTTP-TS fan-out, strom alone (RTMP in, Delivery.outputs [\"MPEGTS\"], curl viewers, ≤ $PER_ADDR per client address)"
    echo
    echo "| viewers | CPU % of a core | CPU ms per viewer-second | delivered Mbit/s per viewer, median (min–max), strom's bytes_sent in the window | curl's own count, median Mbit/s over its life | viewers per core at this bitrate (N / CPU fraction) | core 0 / 1 busy % | core 0 not this server % | notes |"
    echo "|---|---:|---:|---|---:|---:|---|---:|---|"
    printf '%s\n' "${HTTP_ROWS[@]}"
    echo
    for n in "${HTTP_LIST[@]}"; do
        h=HTTP_CPU_$n
        awk -v n="$n" -v c="${!h:-0}" -v i="${HTTP_IDLE_CPU:-0}" 'BEGIN {
            m = (c - i) * 10 / n
            printf "- %s viewers: above the no-viewer ingest (%.2f%%), %.3f ms CPU per viewer-second, %s viewers per core at this bitrate from the marginal cost\n",
                n, i, m, (m > 0 ? sprintf("%.0f", 1000 / m) : "n/a") }'
    done
fi
echo
echo "Command: \`$CMDLINE\`"
