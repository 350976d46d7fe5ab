#!/usr/bin/env bash
# HLS serving benchmark: strom and nginx-rtmp (Debian's libnginx-mod-rtmp, whose HLS files
# nginx serves from disk as static files) side by side in one run.
#
# Both servers run at once, pinned to core 0 (strom's supervisor and every worker inherit
# the pinning; nginx: master + 1 worker). Each gets one live publisher with the same
# source: a 720p30 H.264 + AAC clip (2500 kbps, a keyframe every 2 s) encoded once at the
# start and then published in a loop with `-re -c copy`, so the publishers cost almost no
# CPU. Publishers, wrk and the helpers run on core 1; the publishers go through a small
# RTMP tap (hlsbench.py) that logs the wall time at which each keyframe reached the server.
#
# 1. ingest-to-playlist latency: the media playlist of each server is polled every 2 ms
#    until N new segments appeared; latency = appearance - arrival of the keyframe that
#    ended the segment (the newest keyframe before the appearance).
# 2. requests: for each URL kind (the live chunklist, one ~2 s segment that stays listed or
#    fetchable for the whole run) and each server, `taskset -c 1 wrk -t1 -c64 -d15s`, with
#    the CPU of the server's process tree (utime+stime from /proc) read before and after.
#    Both publishers keep publishing during every run (the live situation): the CPU figures
#    include the server's ingest and packaging (measured alone as "ingest baseline").
# Traffic goes to 127.0.0.1 only; nothing is installed; results go to stdout (markdown).
#
#   bash bench/hls_serving/run.sh [--only nginx|strom] [--duration 15] [--connections 64]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/bench/hls_serving
ONLY=both
DURATION=15
CONNECTIONS=64
LATENCY_SEGMENTS=10
POLL_MS=2
NGINX_RTMP_PORT=19370
NGINX_HTTP_PORT=18170
STROM_RTMP_PORT=19371
STROM_HTTP_PORT=18171
STROM_MGMT_PORT=18172
NGINX_TAP_PORT=19372
STROM_TAP_PORT=19373
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
STROM_BIN=$TARGET_DIR/release/strom
BUILD=1
KEEP=0
QUIET_WAIT=120  # before each measurement, wait up to this long for the cores to be free of other load
RETRIES=2       # repeat a measurement disturbed by other load on core 0 up to this often

usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; cat <<EOF
options: --only nginx|strom|both ($ONLY)  --duration SECS ($DURATION)  --connections N ($CONNECTIONS)
         --latency-segments N ($LATENCY_SEGMENTS)  --poll-ms MS ($POLL_MS)
         --strom-bin PATH ($STROM_BIN)  --quiet-wait SECS ($QUIET_WAIT)  --retries N ($RETRIES)
         --no-build  --keep (keep the temp dir with configs, logs, wrk output and JSON)
ports: nginx rtmp/http $NGINX_RTMP_PORT/$NGINX_HTTP_PORT, strom rtmp/http/management
       $STROM_RTMP_PORT/$STROM_HTTP_PORT/$STROM_MGMT_PORT, taps $NGINX_TAP_PORT/$STROM_TAP_PORT
EOF
}

while (($#)); do
    case $1 in
        --only) ONLY=$2; shift ;;
        --duration) DURATION=$2; shift ;;
        --connections) CONNECTIONS=$2; shift ;;
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
case $ONLY in nginx) SERVERS=(nginx) ;; strom) SERVERS=(strom) ;; both) SERVERS=(nginx strom) ;;
    *) echo "--only takes nginx, strom or both" >&2; exit 2 ;; esac

die() { echo "run.sh: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || die "$1 not found: install the Debian package $2"; }
need wrk wrk
need nginx nginx
need ffmpeg ffmpeg
need taskset util-linux
need curl curl
need python3 python3
[[ -f /usr/lib/nginx/modules/ngx_rtmp_module.so ]] ||
    die "/usr/lib/nginx/modules/ngx_rtmp_module.so not found: install the Debian package libnginx-mod-rtmp"
(($(nproc) >= 2)) || die "needs 2 cores (servers on core 0, publishers, wrk and helpers on core 1)"

if ((BUILD)) && [[ $ONLY != nginx ]]; then
    (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR cargo build --release -p strom) >&2
fi
[[ $ONLY == nginx || -x $STROM_BIN ]] || die "$STROM_BIN missing (cargo build --release -p strom)"

TMP=$(mktemp -d /tmp/hls-serving.XXXXXX)
chmod 755 "$TMP"  # nginx's worker (user nobody when started as root) writes and reads the HLS files
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if ((KEEP)); then echo "configs, logs and results kept in $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "[$(date +%T)] $*" >&2; }
HZ=$(getconf CLK_TCK)

wait_port() { # wait_port PORT PID: until PORT accepts or PID died (10 s)
    for _ in $(seq 100); do
        kill -0 "$2" 2>/dev/null || return 1
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

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
cores() { grep -E '^cpu[01] ' /proc/stat | tr '\n' ' '; }
busy_between() { # busy_between "$(cores)" "$(cores)": "core0% core1%"
    awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " ")
        for (c = 0; c < 2; c++) { o = c * 11
            b1 = x[o+2]+x[o+3]+x[o+4]+x[o+7]+x[o+8]+x[o+9]; t1 = b1+x[o+5]+x[o+6]
            b2 = y[o+2]+y[o+3]+y[o+4]+y[o+7]+y[o+8]+y[o+9]; t2 = b2+y[o+5]+y[o+6]
            printf "%.0f ", (t2 > t1 ? (b2-b1)*100/(t2-t1) : 0) } print "" }'
}

wait_quiet() { # until core 0 < 20% and core 1 < 40% busy (servers' ingest and publishers included)
    local t=0 a c0 c1
    while :; do
        a=$(cores); sleep 2; read -r c0 c1 < <(busy_between "$a" "$(cores)")
        ((c0 < 20 && c1 < 40)) && return 0
        ((t == 0)) && log "cores busy (core 0 ${c0}%, core 1 ${c1}%): waiting up to ${QUIET_WAIT}s"
        ((t += 2, t >= QUIET_WAIT)) && { log "still busy; measuring anyway"; return 0; }
    done
}

start_nginx() {
    local dir=$TMP/nginx
    mkdir -p "$dir/hls" "$dir/temp"
    chmod 777 "$dir/hls" "$dir/temp"
    cat >"$dir/nginx.conf" <<EOF
load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 1024; }
rtmp {
    server {
        listen 127.0.0.1:$NGINX_RTMP_PORT;
        application live {
            live on;
            hls on;
            hls_path $dir/hls;
            hls_fragment 2s;
            hls_playlist_length 12s;
            hls_cleanup off;
        }
    }
}
http {
    access_log off;
    sendfile on;
    tcp_nopush on;
    tcp_nodelay on;
    keepalive_requests 1000000;
    client_body_temp_path $dir/temp/body;
    proxy_temp_path $dir/temp/proxy;
    fastcgi_temp_path $dir/temp/fastcgi;
    uwsgi_temp_path $dir/temp/uwsgi;
    scgi_temp_path $dir/temp/scgi;
    types { application/vnd.apple.mpegurl m3u8; video/mp2t ts; }
    server {
        listen 127.0.0.1:$NGINX_HTTP_PORT;
        root $dir/hls;
        location ~ \.m3u8\$ { add_header Cache-Control no-cache; }
    }
}
EOF
    taskset -c 0 nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" >"$dir/stdout.log" 2>&1 &
    NGINX_PID=$!
    PIDS+=("$NGINX_PID")
    wait_port "$NGINX_RTMP_PORT" "$NGINX_PID" && wait_port "$NGINX_HTTP_PORT" "$NGINX_PID" ||
        die "nginx did not start: $(tail -2 "$dir/error.log" "$dir/stdout.log")"
}

start_strom() {
    local dir=$TMP/strom
    mkdir -p "$dir"
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
    "duration": 2,
    "protocols": ["HLS"]
  }
}
EOF
    taskset -c 0 "$STROM_BIN" run --config "$dir/strom.conf" >"$dir/strom.log" 2>&1 &
    STROM_PID=$!
    PIDS+=("$STROM_PID")
    wait_port "$STROM_RTMP_PORT" "$STROM_PID" && wait_port "$STROM_HTTP_PORT" "$STROM_PID" ||
        die "strom did not start: $(tail -2 "$dir/strom.log")"
    local ready=""
    for _ in $(seq 100); do
        ready=$(curl -s "http://127.0.0.1:$STROM_MGMT_PORT/manage/workers" | grep -o '"state":"[a-z_]*"' | sort -u | tr -d '\n')
        [[ $ready == '"state":"ready"' ]] && return 0
        sleep 0.1
    done
    die "strom workers not ready ($ready): $(tail -2 "$dir/strom.log")"
}

# start_publisher NAME TAP_PORT SERVER_PORT: the RTMP tap and ffmpeg behind it, on core 1.
start_publisher() {
    local dir=$TMP/$1
    : >"$dir/keys.log"
    taskset -c 1 python3 "$HERE/hlsbench.py" tap "$2" "$3" "$dir/keys.log" 2>"$dir/tap.log" &
    PIDS+=("$!")
    wait_port "$2" "$!" || die "$1: RTMP tap did not start: $(tail -2 "$dir/tap.log")"
    taskset -c 1 ffmpeg -nostdin -loglevel warning -re -stream_loop -1 -i "$TMP/source.flv" \
        -c copy -f flv "rtmp://127.0.0.1:$2/live/bench" >"$dir/ffmpeg.log" 2>&1 &
    PIDS+=("$!")
    printf -v "PUB_$1" '%s' "$!"
}

# chunklist_url NAME: the live media playlist URL (strom: opens a viewer session).
chunklist_url() {
    if [[ $1 == nginx ]]; then echo "http://127.0.0.1:$NGINX_HTTP_PORT/bench.m3u8"; return; fi
    local base="http://127.0.0.1:$STROM_HTTP_PORT/live/bench/" line
    line=$(curl -sf "${base}playlist.m3u8" | grep -m1 '^chunks') || return 1
    echo "$base$line"
}
# newest_segment_url CHUNKLIST_URL: the last segment listed, as an absolute URL.
newest_segment_url() {
    local line
    line=$(curl -sf "$1" | grep -v '^#' | grep . | tail -1) || return 1
    echo "${1%/*}/$line"
}
segments_listed() { curl -sf "$1" 2>/dev/null | grep -c '^#EXTINF' || true; }

# children_cpu FILE: seconds of user+system CPU of the reaped children, from the `times`
# output in FILE (first line the shell, second its children).
children_cpu() { awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); s += a[1] * 60 + a[2] } } END { printf "%.3f\n", s }' "$1"; }

# measure NAME KIND URL: one wrk run; sets ROW, NOISY, R_OK and the numbers R_*.
measure() {
    local name=$1 kind=$2 url=$3 out=$TMP/$1/wrk-$2.txt a b c0 c1 s0 s1 n0 n1 t0 t1 reqs rps non2xx serr code size
    read -r code size < <(curl -s -o /dev/null -w '%{http_code} %{size_download}\n' "$url")
    [[ $code == 200 ]] || { ROW="| $name | $kind | | | | | | | | | | | FAIL: $url answered $code |"; NOISY=""; R_OK=0; return; }
    a=$(cores); t0=$(date +%s%N)
    s0=$(tree_ticks "$STROM_PID"); n0=$(tree_ticks "$NGINX_PID")
    times >"$TMP/times0"
    taskset -c 1 wrk -t1 -c"$CONNECTIONS" -d"${DURATION}s" "$url" >"$out" 2>&1 || true
    times >"$TMP/times1"
    s1=$(tree_ticks "$STROM_PID"); n1=$(tree_ticks "$NGINX_PID")
    t1=$(date +%s%N); b=$(cores)
    read -r c0 c1 < <(busy_between "$a" "$b")
    reqs=$(awk '/requests in/ { print $1 }' "$out")
    rps=$(awk '/^Requests\/sec:/ { print $2 }' "$out")
    non2xx=$(awk -F: '/Non-2xx/ { gsub(/ /, "", $2); print $2 }' "$out")
    serr=$(grep -o 'Socket errors:.*' "$out" || true)
    [[ -n $reqs && -n $rps ]] || { ROW="| $name | $kind | | | | | | | | | | | FAIL: wrk: $(tail -1 "$out") |"; NOISY=""; R_OK=0; return; }
    local own base
    if [[ $name == strom ]]; then own=$((s1 - s0)) base=$BASE_strom; else own=$((n1 - n0)) base=$BASE_nginx; fi
    # shellcheck disable=SC2046
    set -- $(awk -v own="$own" -v hz="$HZ" -v ns="$((t1 - t0))" -v reqs="$reqs" -v rps="$rps" \
        -v c0="$c0" -v base="$base" -v w0="$(children_cpu "$TMP/times0")" -v w1="$(children_cpu "$TMP/times1")" 'BEGIN {
        wall = ns / 1e9; cpu = own / hz; frac = cpu / wall
        net = frac - base / 100
        printf "%.1f %.2f %.0f %.0f %.0f %.0f\n", frac * 100, cpu * 1e6 / reqs, rps / frac,
            (net > 0 ? rps / net : 0), c0 - frac * 100, (w1 - w0) / wall * 100 }')
    R_CPU=$1 R_MSPK=$2 R_PERCORE=$3 R_NETCORE=$4 R_REST=$5 R_WRK=$6 R_RPS=$rps R_OK=1
    local notes=()
    [[ -z $non2xx ]] || { notes+=("$non2xx non-2xx answers"); R_OK=0; }
    [[ -z $serr ]] || notes+=("$serr")
    awk -v c="$R_CPU" -v w="$R_WRK" 'BEGIN { exit !(c < 90 && w >= 90) }' &&
        notes+=("client-bound: wrk used ${R_WRK}% of core 1")
    # Core 0 should run only the two servers (the other one just ingests, ~1-2%).
    NOISY=$(awk -v r="$R_REST" 'BEGIN { if (r > 10) printf "core 0 not quiet: %.0f%% other load", r }')
    [[ -z $NOISY ]] || notes+=("$NOISY")
    local IFS=';'
    ROW="| $name | $kind | $size | $rps | $R_CPU | $R_MSPK | $R_PERCORE | $R_NETCORE | $R_WRK | $c0 / $c1 | $R_REST | ${notes[*]:-ok} |"
    ROW=${ROW//;/; }
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "encoding the 60 s source clip"
ffmpeg -nostdin -loglevel error -y -f lavfi -i testsrc2=size=1280x720:rate=30 \
    -f lavfi -i sine=frequency=440:sample_rate=48000 -t 60 \
    -c:v libx264 -preset ultrafast -g 60 -keyint_min 60 -sc_threshold 0 -pix_fmt yuv420p \
    -b:v 2500k -maxrate 2500k -bufsize 5000k -c:a aac -b:a 128k -f flv "$TMP/source.flv" ||
    die "ffmpeg could not encode the source clip"

NGINX_PID=0 STROM_PID=0
for s in "${SERVERS[@]}"; do
    log "$s: starting"
    "start_$s"
done
for s in "${SERVERS[@]}"; do
    if [[ $s == nginx ]]; then start_publisher nginx "$NGINX_TAP_PORT" "$NGINX_RTMP_PORT"
    else start_publisher strom "$STROM_TAP_PORT" "$STROM_RTMP_PORT"; fi
done

declare -A CHUNKLIST
for s in "${SERVERS[@]}"; do
    log "$s: waiting for 4 segments"
    n=0
    for _ in $(seq 120); do
        CHUNKLIST[$s]=$(chunklist_url "$s" 2>/dev/null || true)
        [[ -n ${CHUNKLIST[$s]} ]] && n=$(segments_listed "${CHUNKLIST[$s]}")
        ((n >= 4)) && break
        p=PUB_$s
        kill -0 "${!p}" 2>/dev/null || die "$s: publisher exited: $(tail -2 "$TMP/$s/ffmpeg.log")"
        sleep 0.5
    done
    ((n >= 4)) || die "$s: only $n segments after 60 s (chunklist ${CHUNKLIST[$s]:-none})"
    curl -s "${CHUNKLIST[$s]}" >"$TMP/$s/chunklist-sample.m3u8"
done

# 1. Ingest-to-playlist latency, both servers at once (no wrk running).
wait_quiet
log "latency: waiting for $LATENCY_SEGMENTS new segments of each server"
a=$(cores)
for s in "${SERVERS[@]}"; do
    taskset -c 1 python3 "$HERE/hlsbench.py" latency "${CHUNKLIST[$s]}" "$LATENCY_SEGMENTS" \
        "$TMP/$s/keys.log" --interval-ms "$POLL_MS" >"$TMP/$s/latency.json" 2>"$TMP/$s/latency.err" &
    printf -v "LAT_PID_$s" '%s' "$!"
done
for s in "${SERVERS[@]}"; do p=LAT_PID_$s; wait "${!p}" || die "$s: latency probe failed: $(tail -2 "$TMP/$s/latency.err")"; done
read -r LAT_C0 LAT_C1 < <(busy_between "$a" "$(cores)")

# 2. Ingest baseline: the servers' CPU with the publishers only.
log "ingest baseline (10 s)"
t0=$(date +%s%N); s0=$(tree_ticks "$STROM_PID"); n0=$(tree_ticks "$NGINX_PID"); a=$(cores)
sleep 10
t1=$(date +%s%N); s1=$(tree_ticks "$STROM_PID"); n1=$(tree_ticks "$NGINX_PID")
read -r BASE_C0 BASE_C1 < <(busy_between "$a" "$(cores)")
BASE_strom=$(awk -v d="$((s1 - s0))" -v hz="$HZ" -v ns="$((t1 - t0))" 'BEGIN { printf "%.1f", d / hz / (ns / 1e9) * 100 }')
BASE_nginx=$(awk -v d="$((n1 - n0))" -v hz="$HZ" -v ns="$((t1 - t0))" 'BEGIN { printf "%.1f", d / hz / (ns / 1e9) * 100 }')

# 3. Requests: chunklist, then segment; nginx and strom alternately.
declare -A PERCORE NETCORE RPS
ROWS=""
for kind in chunklist segment; do
    for s in "${SERVERS[@]}"; do
        for ((try = 0; try <= RETRIES; try++)); do
            wait_quiet
            if [[ $kind == chunklist ]]; then url=${CHUNKLIST[$s]}
            else url=$(newest_segment_url "${CHUNKLIST[$s]}") || die "$s: no segment listed"; fi
            log "$s: $kind: wrk -t1 -c$CONNECTIONS -d${DURATION}s $url"
            measure "$s" "$kind" "$url"
            [[ -n $NOISY && $try -lt $RETRIES ]] || break
            log "$s: $kind disturbed ($NOISY); again"
        done
        ROWS+="$ROW"$'\n'
        if ((R_OK)); then PERCORE[$s.$kind]=$R_PERCORE NETCORE[$s.$kind]=$R_NETCORE RPS[$s.$kind]=$R_RPS; fi
        echo "$kind $url" >>"$TMP/$s/urls.txt"
    done
done

# Output (markdown).
jq_py() { python3 -c 'import json,sys
d = json.load(open(sys.argv[1])); v = d
for k in sys.argv[2].split("."):
    v = v.get(k) if isinstance(v, dict) else None
print("" if v is None else v)' "$@"; }
printf 'HLS serving: %s cores (%s), %s, load average before the run: %s\n' "$(nproc)" \
    "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "$(date -u '+%F %H:%M UTC')" "$LOAD_BEFORE"
printf 'wrk -t1 -c%s -d%ss on core 1; servers on core 0; publishers (720p30, 2.5 Mbit/s, 2 s GOP) live throughout\n\n' "$CONNECTIONS" "$DURATION"
echo "| server | URL | body bytes | requests/s | server CPU % of a core | CPU ms / 1000 req | req per core-second | same, net of ingest | wrk CPU % | core 0 / 1 busy % | core 0 not this server % | notes |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---|"
printf '%s' "$ROWS"
if [[ $ONLY == both ]]; then
    echo
    echo "| URL | strom/nginx requests/s | strom/nginx req per core-second | same, net of ingest |"
    echo "|---|---:|---:|---:|"
    for kind in chunklist segment; do
        awk -v k="$kind" -v sr="${RPS[strom.$kind]:-0}" -v nr="${RPS[nginx.$kind]:-0}" \
            -v sp="${PERCORE[strom.$kind]:-0}" -v np="${PERCORE[nginx.$kind]:-0}" \
            -v sn="${NETCORE[strom.$kind]:-0}" -v nn="${NETCORE[nginx.$kind]:-0}" 'function r(a, b) { return b > 0 ? sprintf("%.2f", a / b) : "n/a" }
            BEGIN { printf "| %s | %s | %s | %s |\n", k, r(sr, nr), r(sp, np), r(sn, nn) }'
    done
fi
echo
echo "Ingest baseline (publishers only, 10 s): $(for s in "${SERVERS[@]}"; do v=BASE_$s; printf '%s %s%% of a core; ' "$s" "${!v}"; done)core 0 / 1 busy ${BASE_C0}% / ${BASE_C1}%."
echo
echo "Ingest-to-playlist latency ($LATENCY_SEGMENTS segments per server, playlist polled every ${POLL_MS} ms; core 0 / 1 busy ${LAT_C0}% / ${LAT_C1}%):"
echo
echo "| server | segments | keyframe interval ms | latency p50 ms | p95 ms | min ms | max ms | keyframe -> cut p50 / p95 ms | cut -> listed p50 / p95 ms |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|"
for s in "${SERVERS[@]}"; do
    f=$TMP/$s/latency.json
    k2c=$(jq_py "$f" key_to_cut_ms.p50) c2l=$(jq_py "$f" cut_to_listed_ms.p50)
    printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$s" "$(jq_py "$f" segments)" \
        "$(jq_py "$f" keyframe_interval_ms_p50)" "$(jq_py "$f" latency_ms.p50)" "$(jq_py "$f" latency_ms.p95)" \
        "$(jq_py "$f" latency_ms.min)" "$(jq_py "$f" latency_ms.max)" \
        "${k2c:+$k2c / $(jq_py "$f" key_to_cut_ms.p95)}" "${c2l:+$c2l / $(jq_py "$f" cut_to_listed_ms.p95)}"
done
for s in "${SERVERS[@]}"; do
    printf '\n%s segment durations (EXTINF) at the start: %s\n' "$s" \
        "$(grep '^#EXTINF' "$TMP/$s/chunklist-sample.m3u8" | cut -d: -f2 | tr -d ',' | tr '\n' ' ')"
done
