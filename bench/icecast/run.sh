#!/usr/bin/env bash
# Icecast listeners benchmark: listeners per core at 128 kbit/s MP3 with ICY metadata, strom
# and Debian's icecast2 serving the same source to the same load, side by side in one run.
#
# Source: 60 s of a 440 Hz sine (44.1 kHz mono) encoded once by libmp3lame to a 128 kbit/s
# CBR MP3 file, played in a loop by `ffmpeg -re -stream_loop -1 -c copy` into each server:
#   strom     over RTMP (audio-only FLV) to rtmp://127.0.0.1:<rtmp>/live/radio, rules
#             `"Delivery": {"outputs": ["ICECAST"]}`; listeners at
#             http://127.0.0.1:<http>/live/radio/icecast.stream. --strom-feed icecast (or
#             STROM_FEED=icecast) sends the same file as an Icecast source instead, as
#             icecast2 gets it (ffmpeg icecast:// to strom's HTTP port, credentials in
#             rules.conf `IcecastSources`; strom's source ingest, since bfa9166).
#   icecast2  as an Icecast source (`-content_type audio/mpeg -f mp3 icecast://`) to mount
#             /radio; run as root it drops to nobody:nogroup (<changeowner>); <limits>
#             <clients> above the largest step.
# Both servers run for the whole run on core 0 (strom's supervisor and every worker inherit
# the pinning); both publishers and the load generator run on core 1. Both get the same
# title before the first listener (strom: POST /manage/icecast_metadata; icecast2:
# /admin/metadata?mode=updinfo), so metadata blocks carry text.
#
# Load: `icecast-listen` (bench/icecast/src/main.rs, one tokio process): N listeners, each
# `GET ... HTTP/1.1` with `Icy-MetaData: 1`, 50 per client address (127.0.0.2, .3, ...;
# strom caps 64 per address), that split audio from icy-metaint blocks and count both. For
# each N the servers take turns (strom, then icecast2), each with a fresh generator run:
# ramp at 200 listeners/s, --warmup seconds, then a --duration window over which the
# generator samples utime+stime (/proc/<pid>/stat) of the server's process tree (strom:
# the supervisor and all its workers; icecast2: its one process) and each listener's audio
# bytes. Before the steps, one window with no listener per server (ingest only).
# Before each window the script waits for the cores to be free of other load, and repeats a
# window where more than 10% of core 0 was not the server (--retries).
#
# Figures: server CPU % of one core; listeners per core = N / (CPU % / 100) (a linear
# extrapolation, not a saturation test); CPU ms per listener-second; per-listener audio
# rate (metadata taken out) min / median, and how many fell behind (< 95% of 128 kbit/s);
# TCP data segments each listener received per second (tcpi_data_segs_in; on loopback
# about one per send of the server) and their mean size.
# Traffic stays on 127.0.0.0/8; nothing is installed; results go to stdout (markdown),
# progress to stderr.
#
#   bash bench/icecast/run.sh [--listeners 100,500,1000,2000] [--duration 20] [--warmup 5]
#                             [--only strom|icecast2] [--strom-feed rtmp|icecast]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
CMDLINE="bash bench/icecast/run.sh${*:+ $*}"
ONLY=both
STEPS=100,500,1000,2000
DURATION=20
WARMUP=5
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
STROM_BIN=$TARGET_DIR/release/strom
GEN=$TARGET_DIR/release/icecast-listen
BUILD=1
KEEP=0
QUIET_WAIT=90
RETRIES=2
PER_ADDR=50
# How strom is fed: rtmp (today) or icecast (strom's Icecast source ingest).
STROM_FEED=${STROM_FEED:-rtmp}
SOURCE_PASSWORD=hackme
ADMIN_PASSWORD=hackme
TITLE="strom bench - 440 Hz sine"

usage() { sed -n '2,41p' "$0" | sed 's/^# \{0,1\}//'; cat <<EOF
options: --listeners LIST ($STEPS)  --duration SECS ($DURATION)  --warmup SECS ($WARMUP)
         --only strom|icecast2|both ($ONLY)  --strom-feed rtmp|icecast ($STROM_FEED)
         --quiet-wait SECS ($QUIET_WAIT)  --retries N ($RETRIES)  --strom-bin PATH ($STROM_BIN)
         --no-build  --keep (keep the temp dir with configs, logs and JSON)
ports: a random free block of high ports, printed on stderr
EOF
}

while (($#)); do
    case $1 in
        --listeners) STEPS=$2; shift ;;
        --duration) DURATION=$2; shift ;;
        --warmup) WARMUP=$2; shift ;;
        --only) ONLY=$2; shift ;;
        --strom-feed) STROM_FEED=$2; shift ;;
        --quiet-wait) QUIET_WAIT=$2; shift ;;
        --retries) RETRIES=$2; shift ;;
        --strom-bin) STROM_BIN=$2; shift ;;
        --no-build) BUILD=0 ;;
        --keep) KEEP=1 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
case $ONLY in strom) SERVERS=(strom) ;; icecast2) SERVERS=(icecast2) ;; both) SERVERS=(strom icecast2) ;;
    *) echo "--only takes strom, icecast2 or both" >&2; exit 2 ;; esac
case $STROM_FEED in rtmp|icecast) ;; *) echo "--strom-feed takes rtmp or icecast" >&2; exit 2 ;; esac
IFS=, read -r -a STEP_LIST <<<"$STEPS"

die() { echo "run.sh: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || die "$1 not found: install the Debian package $2"; }
need ffmpeg ffmpeg
need icecast2 icecast2
need taskset util-linux
need curl curl
need python3 python3
(($(nproc) >= 2)) || die "needs 2 cores (servers on core 0, publishers and listeners on core 1)"

if ((BUILD)); then
    (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR cargo build --release -p strom -p strom-bench-icecast) >&2
fi
[[ -x $STROM_BIN ]] || die "$STROM_BIN missing (cargo build --release -p strom)"
[[ -x $GEN ]] || die "$GEN missing (cargo build --release -p strom-bench-icecast)"

MAXN=0
for n in "${STEP_LIST[@]}"; do ((n > MAXN)) && MAXN=$n; done
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
(($(ulimit -n) > MAXN + 200)) || die "ulimit -n is $(ulimit -n): too low for $MAXN listeners"

# A block of 4 consecutive TCP ports free on 127.0.0.1.
BASE=$(python3 - <<'EOF'
import random, socket, sys
for _ in range(200):
    base = random.randrange(20000, 60000)
    try:
        socks = []
        for p in range(base, base + 4):
            s = socket.socket()
            socks.append(s)
            s.bind(("127.0.0.1", p))
    except OSError:
        continue
    finally:
        for s in socks:
            s.close()
    print(base)
    sys.exit(0)
sys.exit("no free port block")
EOF
) || die "no free block of ports"
HTTP_PORT=$BASE MGMT_PORT=$((BASE + 1)) RTMP_PORT=$((BASE + 2)) ICE_PORT=$((BASE + 3))

TMP=$(mktemp -d /tmp/icecast-bench.XXXXXX)
chmod 755 "$TMP" # icecast2 runs as nobody and writes its logs under here
PIDS=()
cleanup() { # ends this script's own background processes, newest first
    local i
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill "${PIDS[i]}" 2>/dev/null || true; done
    for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do wait "${PIDS[i]}" 2>/dev/null || true; done
    if ((KEEP)); then echo "configs, logs and JSON kept in $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log() { echo "[$(date +%T)] $*" >&2; }
alive() { kill -0 "$1" 2>/dev/null; }
log "ports: strom http $HTTP_PORT, management $MGMT_PORT, rtmp $RTMP_PORT; icecast2 $ICE_PORT"

cores() { grep -E '^cpu[01] ' /proc/stat | tr '\n' ' '; }
busy_between() { # busy_between "$(cores)" "$(cores)": "core0% core1%"
    awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " ")
        for (c = 0; c < 2; c++) { o = c * 11
            b1 = x[o+2]+x[o+3]+x[o+4]+x[o+7]+x[o+8]+x[o+9]; t1 = b1+x[o+5]+x[o+6]
            b2 = y[o+2]+y[o+3]+y[o+4]+y[o+7]+y[o+8]+y[o+9]; t2 = b2+y[o+5]+y[o+6]
            printf "%.0f ", (t2 > t1 ? (b2-b1)*100/(t2-t1) : 0) } print "" }'
}
wait_quiet() { # until core 0 < 10% and core 1 < 25% busy (both servers and publishers idle-ish), or QUIET_WAIT
    local t=0 a c0 c1
    while :; do
        a=$(cores); sleep 2; read -r c0 c1 < <(busy_between "$a" "$(cores)")
        ((c0 < 10 && c1 < 25)) && return 0
        ((t == 0)) && log "cores busy (core 0 ${c0}%, core 1 ${c1}%): waiting up to ${QUIET_WAIT}s"
        ((t += 2, t >= QUIET_WAIT)) && { log "still busy; measuring anyway"; return 0; }
    done
}
jget() { python3 -c 'import json,sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v.get(k) if isinstance(v, dict) else None
if isinstance(v, dict): print("; ".join(f"{k} {x}" for k, x in v.items()))
elif isinstance(v, list): print(" / ".join(map(str, v)))
else: print("" if v is None else v)' "$@" 2>/dev/null || true; }

start_strom() {
    local dir=$TMP/strom sources=""
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
    [[ $STROM_FEED == icecast ]] && sources=',
  "IcecastSources": [{ "app": "live", "user": "source", "password": "'$SOURCE_PASSWORD'" }]'
    cat >"$dir/rules.conf" <<EOF
{
  "RtmpSettings": { "interfaces": [{ "ip": "127.0.0.1", "port": $RTMP_PORT }] },
  "Delivery": { "outputs": ["ICECAST"] }$sources
}
EOF
    taskset -c 0 "$STROM_BIN" run --config "$dir/strom.conf" >"$dir/server.log" 2>&1 &
    STROM_PID=$!
    PIDS+=("$STROM_PID")
    for _ in $(seq 100); do
        curl -sf "http://127.0.0.1:$MGMT_PORT/manage/server_status" >/dev/null 2>&1 && break
        alive "$STROM_PID" || die "strom exited: $(tail -5 "$dir/server.log")"
        sleep 0.2
    done
    local url out
    if [[ $STROM_FEED == rtmp ]]; then
        url="rtmp://127.0.0.1:$RTMP_PORT/live/radio" out=(-f flv)
    else
        url="icecast://source:$SOURCE_PASSWORD@127.0.0.1:$HTTP_PORT/live/radio"
        out=(-content_type audio/mpeg -id3v2_version 0 -write_xing 0 -f mp3)
    fi
    taskset -c 1 ffmpeg -nostdin -loglevel warning -re -stream_loop -1 -i "$TMP/clip.mp3" -c copy \
        "${out[@]}" "$url" >"$dir/ffmpeg.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 100); do
        curl -sf "http://127.0.0.1:$MGMT_PORT/manage/icecast_stream_info/live/radio" >/dev/null 2>&1 && break
        alive "${PIDS[-1]}" || die "strom's publisher exited: $(tail -3 "$dir/ffmpeg.log")"
        sleep 0.2
    done
    curl -sf "http://127.0.0.1:$MGMT_PORT/manage/icecast_stream_info/live/radio" >/dev/null ||
        die "live/radio not listenable on strom after 20 s: $(tail -3 "$dir/ffmpeg.log" "$dir/server.log")"
    curl -sf -X POST "http://127.0.0.1:$MGMT_PORT/manage/icecast_metadata/live/radio" \
        -d "{\"streamtitle\": \"$TITLE\"}" >/dev/null || die "strom did not take the title"
    URL_strom="http://127.0.0.1:$HTTP_PORT/live/radio/icecast.stream"
    PID_strom=$STROM_PID
}

start_icecast2() {
    local dir=$TMP/icecast2
    mkdir -p "$dir/log"
    chown nobody:nogroup "$dir/log"
    cat >"$dir/icecast.xml" <<EOF
<icecast>
  <location>bench</location>
  <admin>bench@localhost</admin>
  <limits>
    <clients>$((MAXN + 100))</clients>
    <sources>2</sources>
    <queue-size>524288</queue-size>
    <client-timeout>30</client-timeout>
    <header-timeout>15</header-timeout>
    <source-timeout>10</source-timeout>
    <burst-on-connect>1</burst-on-connect>
    <burst-size>65535</burst-size>
  </limits>
  <authentication>
    <source-password>$SOURCE_PASSWORD</source-password>
    <relay-password>$SOURCE_PASSWORD</relay-password>
    <admin-user>admin</admin-user>
    <admin-password>$ADMIN_PASSWORD</admin-password>
  </authentication>
  <hostname>127.0.0.1</hostname>
  <listen-socket>
    <port>$ICE_PORT</port>
    <bind-address>127.0.0.1</bind-address>
  </listen-socket>
  <fileserve>1</fileserve>
  <paths>
    <basedir>/usr/share/icecast2</basedir>
    <logdir>$dir/log</logdir>
    <webroot>/usr/share/icecast2/web</webroot>
    <adminroot>/usr/share/icecast2/admin</adminroot>
  </paths>
  <logging>
    <accesslog>access.log</accesslog>
    <errorlog>error.log</errorlog>
    <loglevel>2</loglevel>
  </logging>
  <security>
    <chroot>0</chroot>
    <changeowner><user>nobody</user><group>nogroup</group></changeowner>
  </security>
</icecast>
EOF
    taskset -c 0 icecast2 -c "$dir/icecast.xml" >"$dir/stdout.log" 2>&1 &
    ICE_PID=$!
    PIDS+=("$ICE_PID")
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$ICE_PORT") 2>/dev/null && break
        alive "$ICE_PID" || die "icecast2 exited: $(tail -5 "$dir/stdout.log" "$dir/log/error.log" 2>/dev/null)"
        sleep 0.1
    done
    taskset -c 1 ffmpeg -nostdin -loglevel warning -re -stream_loop -1 -i "$TMP/clip.mp3" -c copy \
        -content_type audio/mpeg -id3v2_version 0 -write_xing 0 -f mp3 \
        "icecast://source:$SOURCE_PASSWORD@127.0.0.1:$ICE_PORT/radio" >"$dir/ffmpeg.log" 2>&1 &
    PIDS+=($!)
    local mounts=""
    for _ in $(seq 100); do
        mounts=$(curl -sf -u "admin:$ADMIN_PASSWORD" "http://127.0.0.1:$ICE_PORT/admin/listmounts" 2>/dev/null || true)
        [[ $mounts == *'"/radio"'* ]] && break
        alive "${PIDS[-1]}" || die "icecast2's publisher exited: $(tail -3 "$dir/ffmpeg.log")"
        sleep 0.2
    done
    [[ $mounts == *'"/radio"'* ]] || die "mount /radio not up on icecast2 after 20 s: $(tail -3 "$dir/ffmpeg.log" "$dir/log/error.log")"
    curl -sf -u "admin:$ADMIN_PASSWORD" -G "http://127.0.0.1:$ICE_PORT/admin/metadata" \
        --data-urlencode "mount=/radio" --data-urlencode "mode=updinfo" --data-urlencode "song=$TITLE" \
        >/dev/null || die "icecast2 did not take the title"
    URL_icecast2="http://127.0.0.1:$ICE_PORT/radio"
    PID_icecast2=$ICE_PID
}

ROWS=()
# measure SERVER N: one generator run (repeated while other load disturbed core 0); adds a
# row to ROWS and sets CPU_<server>_<n>.
measure() {
    local s=$1 n=$2 try out url pid cpu c0 rest note
    url=URL_$s pid=PID_$s
    for ((try = 0; try <= RETRIES; try++)); do
        wait_quiet
        out=$TMP/$s-n$n-try$try.json
        log "$s: $n listeners (window ${DURATION}s after ${WARMUP}s warm-up)"
        alive "${!pid}" || die "$s exited"
        taskset -c 1 "$GEN" --url "${!url}" --listeners "$n" --per-address "$PER_ADDR" \
            --warmup-secs "$WARMUP" --measure-secs "$DURATION" --title "$TITLE" \
            --server-pid "${!pid}" --ksoftirqd-core 0 >"$out" 2>"$out.err" ||
            die "generator failed: $(tail -3 "$out.err")"
        cpu=$(jget "$out" server_cpu_pct)
        c0=$(jget "$out" core_busy_pct | cut -d' ' -f1)
        rest=$(awk -v c="$c0" -v u="$cpu" 'BEGIN { printf "%.0f", c - u }')
        ((rest > 10)) || break
        ((try < RETRIES)) && log "$s, $n listeners: window disturbed (core 0: ${rest}% other load); again"
    done
    note=ok
    ((rest > 10)) && note="core 0 not quiet: ${rest}% other load"
    awk -v c="$cpu" 'BEGIN { exit !(c >= 90) }' && note="$note; server CPU-bound"
    awk -v g="$(jget "$out" gen_cpu_pct)" 'BEGIN { exit !(g >= 80) }' && note="$note; generator near its core's limit"
    local errs; errs=$(jget "$out" errors)
    [[ -n $errs ]] && note="$note; errors: $errs"
    printf -v "CPU_${s}_$n" '%s' "$cpu"
    if ((n == 0)); then
        ROWS+=("| $s | 0 (ingest only; $(jget "$out" server_procs) processes) | | | | | $cpu | $(jget "$out" server_cpu_pct_by_proc) | | | | $(jget "$out" ksoftirqd_cpu_pct) | $(jget "$out" gen_cpu_pct) | $(jget "$out" core_busy_pct) | $rest | $note |")
        return
    fi
    local ms; ms=$(awk -v c="$cpu" -v n="$n" 'BEGIN { printf "%.3f", c * 10 / n }')
    ROWS+=("| $s | $n | $(jget "$out" listeners_connected) | $(jget "$out" listeners_behind) | $(jget "$out" audio_kbps_min) / $(jget "$out" audio_kbps_median) | $(jget "$out" listeners_with_title) (icy-metaint $(python3 -c 'import json,sys; print(", ".join(json.load(open(sys.argv[1]))["metaint"]))' "$out" 2>/dev/null)) | $cpu | $(jget "$out" server_cpu_pct_by_proc) | $(jget "$out" listeners_per_core) | $ms | $(jget "$out" segments_per_listener_sec_median) ($(jget "$out" bytes_per_segment) B each) | $(jget "$out" ksoftirqd_cpu_pct) | $(jget "$out" gen_cpu_pct) | $(jget "$out" core_busy_pct) | $rest | $note |")
}

if [[ $STROM_BIN == "$TARGET_DIR/release/strom" ]]; then
    STROM_DESC="release build of the working tree at HEAD $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo '?')"
else
    STROM_DESC="binary $STROM_BIN"
fi
STROM_DESC+=" (built $(date -u -r "$STROM_BIN" '+%F %H:%M UTC'))"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "load average before the run: $LOAD_BEFORE"
log "encoding the 60 s source (128 kbit/s CBR MP3)"
ffmpeg -nostdin -loglevel error -y -f lavfi -i sine=frequency=440:sample_rate=44100 -t 60 \
    -c:a libmp3lame -b:a 128k "$TMP/clip.mp3" || die "ffmpeg could not encode the source"

for s in "${SERVERS[@]}"; do "start_$s"; done
log "servers up: strom pid ${PID_strom:-none}, icecast2 pid ${PID_icecast2:-none}"
sleep "$WARMUP"
for s in "${SERVERS[@]}"; do measure "$s" 0; done
for n in "${STEP_LIST[@]}"; do
    for s in "${SERVERS[@]}"; do measure "$s" "$n"; done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

echo "### Icecast listeners: 128 kbit/s MP3 with ICY metadata, strom and icecast2"
echo
printf '%s cores (%s), %s, load average before / after the run: %s / %s. Source: 128 kbit/s CBR MP3 (libmp3lame, 44.1 kHz, 440 Hz sine, 60 s looped by `ffmpeg -re -stream_loop -1 -c copy`); strom fed over %s, icecast2 over icecast://. Servers on core 0, publishers and the generator on core 1. Window %ss after %ss warm-up. strom %s; icecast2 %s.\n' \
    "$(nproc)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "$(date -u '+%F %H:%M UTC')" \
    "$LOAD_BEFORE" "$LOAD_AFTER" "$STROM_FEED" "$DURATION" "$WARMUP" \
    "$STROM_DESC" \
    "$(dpkg-query -W -f '${Version}' icecast2 2>/dev/null || echo '?')"
echo
echo "| server | listeners | connected | fell behind (< 95% of 128 kbit/s) | audio kbit/s per listener, min / median | listeners that got the title | CPU % of a core | by process | listeners per core (N / CPU fraction) | CPU ms per listener-second | TCP data segments per listener-second, median (bytes each) | ksoftirqd/0 % (not in CPU) | generator CPU % | core 0 / 1 busy % | core 0 not this server % | notes |"
echo "|---|---:|---:|---:|---|---|---:|---|---:|---:|---|---:|---:|---|---:|---|"
printf '%s\n' "${ROWS[@]}"
if [[ $ONLY == both ]]; then
    echo
    for n in "${STEP_LIST[@]}"; do
        s=CPU_strom_$n i=CPU_icecast2_$n
        awk -v n="$n" -v s="${!s:-0}" -v i="${!i:-0}" -v s0="${CPU_strom_0:-0}" -v i0="${CPU_icecast2_0:-0}" 'BEGIN {
            ms = (s - s0) * 10 / n; mi = (i - i0) * 10 / n
            printf "- %s listeners: listeners per core strom %s, icecast2 %s (strom / icecast2 CPU = %s); above each one'"'"'s ingest-only window: strom %.3f, icecast2 %.3f ms per listener-second, %s and %s listeners per core\n", n,
                (s > 0 ? sprintf("%.0f", n * 100 / s) : "n/a"), (i > 0 ? sprintf("%.0f", n * 100 / i) : "n/a"),
                (i > 0 ? sprintf("%.2f", s / i) : "n/a"), ms, mi,
                (ms > 0 ? sprintf("%.0f", 1000 / ms) : "n/a"), (mi > 0 ? sprintf("%.0f", 1000 / mi) : "n/a") }'
    done
fi
echo
echo "Command: \`$CMDLINE\`"
