#!/usr/bin/env bash
# DVR benchmark (issue 11): strom's dvr worker recording N live streams, side by side with
# N `ffmpeg -c copy` recorders writing the same streams to MP4 segments, in one run; then
# the export speed of a one-hour archive, side by side with ffmpeg concatenating one hour
# of MP4 segments into one MP4.
#
# 1. Recording. A 20 s clip (1280x720 25 fps x264, ~1.4 Mbit/s CBR, 2 s GOP without scene
#    cuts, AAC 96k) is encoded once to FLV and published N times over RTMP by
#    `ffmpeg -re -stream_loop -1 -c copy` (live/s0..s<N-1>). strom records every stream
#    (`Delivery.outputs` ["DVR"], `Dvr.segment_duration_secs` 6). At the same time N
#    `ffmpeg -i rtmp://.../live/sI -c copy -f segment -segment_time 6 -segment_format mp4
#    -reset_timestamps 1` play the same streams from strom and write MP4 segments: both
#    recorders get the same streams at the same time. After --warmup seconds, one window
#    of --duration seconds: CPU (utime+stime from /proc, process tree) of the dvr worker,
#    of the whole strom tree (which also ingests the N publishers and serves the N ffmpeg
#    players), of the N ffmpeg recorders summed and of the N publishers; bytes written by
#    the dvr worker and by the ffmpeg recorders (/proc/PID/io write_bytes: page-cache
#    pages they dirtied, i.e. what goes to the block layer, and wchar: bytes passed to
#    write calls); growth of each one's output directory. Media bytes of the window = what
#    strom sent to the N ffmpeg recorders over RTMP (/manage/sessions bytes_sent: the same
#    frames the dvr worker got, plus a few % of RTMP/FLV framing); write amplification =
#    bytes written / media bytes. The clip's elementary-stream payload rate (ffprobe
#    packet sizes / duration) x N x window is printed as a cross-check.
# 2. Export. A fresh strom records one hour of the clip (`-stream_loop -1 -t 3600 -c copy`)
#    as live/hour, published at --hour-readrate x real time (default 30: 2 minutes; with
#    no pacing at all the whole hour lands in strom's RTMP socket at once and the dvr
#    worker's bounded reader drops GOPs, by design); dvr_status must then list ~3600 s.
#    Three whole-archive exports (`GET /manage/dvr/export_mp4/live/hour`) by curl to
#    /dev/null, then three to a file. Peer: ffmpeg writes the same hour as 6 s MP4
#    segments (as in 1; strom's archive is deleted first, the disk is shared), then three
#    `ffmpeg -f concat -c copy -movflags +faststart` of the segments into one MP4 (moov
#    before mdat, like strom's export), and one without faststart (moov last) to show what
#    faststart costs. Before the first run of each series its input
#    files are evicted from the page cache (fsync + posix_fadvise DONTNEED of those files
#    only): run 1 reads from the disk, runs 2-3 from a warm cache. MB/s = output bytes /
#    wall time (1 MB = 10^6 bytes). Both outputs are checked with ffprobe (~3600 s).
#
# Nothing is pinned (2 cores shared with other work): before each part the script waits
# up to --quiet-wait seconds for the machine to be < 30% busy, and reports how much of the
# window's CPU was not this benchmark. Results go to stdout (markdown), progress to
# stderr; everything lives in a temp dir on the disk of /tmp (deleted unless --keep).
# Disk needed at the peak: ~N x 2 x 1.5 Mbit/s x (warm-up + window + 10 s) in 1 (1.7 GB
# for 50 streams), 2 x 0.7 GB in 2; before each part the script checks that this much
# plus --margin-gb stays free (the disk is shared: a full disk breaks everyone's builds).
#
#   bash bench/dvr/run.sh [--streams 50] [--duration 60] [--warmup 20] [--hour 3600]
#                         [--hour-readrate 30] [--only record|export|both] [--no-build]
#                         [--keep] [--strom-bin PATH] [--margin-gb 1]
#                         [--quiet-wait 120]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/bench/dvr
CMDLINE="bash bench/dvr/run.sh${*:+ $*}"
N=50
DURATION=60
WARMUP=20
HOUR=3600
HOUR_READRATE=30
ONLY=both
BUILD=1
KEEP=0
MARGIN_GB=1
QUIET_WAIT=120
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
STROM_BIN=$TARGET_DIR/release/strom
SEGMENT=6

while (($#)); do
    case $1 in
        --streams) N=$2; shift ;;
        --duration) DURATION=$2; shift ;;
        --warmup) WARMUP=$2; shift ;;
        --hour) HOUR=$2; shift ;;
        --hour-readrate) HOUR_READRATE=$2; shift ;;
        --only) ONLY=$2; shift ;;
        --strom-bin) STROM_BIN=$2; shift ;;
        --margin-gb) MARGIN_GB=$2; shift ;;
        --quiet-wait) QUIET_WAIT=$2; shift ;;
        --no-build) BUILD=0 ;;
        --keep) KEEP=1 ;;
        -h|--help) sed -n '2,49p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
case $ONLY in record|export|both) ;; *) echo "--only takes record, export or both" >&2; exit 2 ;; esac

die() { echo "dvr bench: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || die "$1 not found: install the Debian package $2"; }
need ffmpeg ffmpeg
need ffprobe ffmpeg
need curl curl
need python3 python3
need pgrep procps

if ((BUILD)); then
    (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR cargo build --release -p strom) >&2
fi
[[ -x $STROM_BIN ]] || die "$STROM_BIN missing (cargo build --release -p strom)"

TMP=$(mktemp -d /tmp/dvr-bench.XXXXXX)
FREE_GB=$(df -P --block-size=1G "$TMP" | awk 'NR == 2 { print $4 }')

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
alive() { kill -0 "$1" 2>/dev/null; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
jget() { python3 -c 'import json,sys
v = json.loads(sys.argv[1])
for k in sys.argv[2].split("."):
    v = v.get(k) if isinstance(v, dict) else None
print("" if v is None else v)' "$@" 2>/dev/null || true; }
fmt() { awk -v x="$1" -v d="${2:-2}" 'BEGIN { printf "%.*f", d, x }'; }
cores_busy() { # cores_busy "$(head -1 /proc/stat)" "$(head -1 /proc/stat)": busy % of the whole machine
    awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " ")
        b1 = x[2]+x[3]+x[4]+x[7]+x[8]+x[9]; t1 = b1+x[5]+x[6]
        b2 = y[2]+y[3]+y[4]+y[7]+y[8]+y[9]; t2 = b2+y[5]+y[6]
        printf "%.0f", (t2 > t1 ? (b2-b1)*100/(t2-t1) : 0) }'
}

wait_quiet() { # until the whole machine is < 30% busy over 2 s, or QUIET_WAIT seconds
    local t=0 a busy
    while :; do
        a=$(head -1 /proc/stat); sleep 2; busy=$(cores_busy "$a" "$(head -1 /proc/stat)")
        ((busy < 30)) && return 0
        ((t == 0)) && log "machine ${busy}% busy: waiting up to ${QUIET_WAIT}s for other work to calm down"
        ((t += 2, t >= QUIET_WAIT)) && { log "still ${busy}% busy; measuring anyway"; return 0; }
    done
}

# need_space BYTES WHAT: dies unless BYTES + --margin-gb are free where $TMP lives.
need_space() {
    local free; free=$(df -P --block-size=1 "$TMP" | awk 'NR == 2 { print $4 }')
    awk -v f="$free" -v b="$1" -v m="$MARGIN_GB" 'BEGIN { exit !(f >= b + m * 1e9) }' ||
        die "$2 needs $(fmt "$(awk -v b="$1" 'BEGIN { print b / 1e9 }')" 1) GB and ${MARGIN_GB} GB must stay free; $(fmt "$(awk -v f="$free" 'BEGIN { print f / 1e9 }')" 1) GB are free"
}

# start_strom NAME: a strom recording every stream (Delivery ["DVR"]) in $TMP/NAME.
start_strom() {
    local dir=$TMP/$1
    mkdir -p "$dir"
    RTMP_PORT=$(free_port) HTTP_PORT=$(free_port) MGMT_PORT=$(free_port)
    API=http://127.0.0.1:$MGMT_PORT/manage
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
    # min_free_space_mb 0: the bench checks the space itself, and retention must not
    # delete anything during a measurement.
    cat >"$dir/rules.conf" <<EOF
{
  "RtmpSettings": { "interfaces": [{ "ip": "127.0.0.1", "port": $RTMP_PORT }] },
  "Delivery": { "outputs": ["DVR"] },
  "Dvr": { "segment_duration_secs": $SEGMENT, "min_free_space_mb": 0 }
}
EOF
    "$STROM_BIN" run --config "$dir/strom.conf" >"$dir/server.log" 2>&1 &
    SERVER_PID=$!
    PIDS+=("$SERVER_PID")
    STROM_DIR=$dir
    DVR_ROOT=$dir/data/dvr
    for _ in $(seq 100); do
        curl -sf "$API/server_status" >/dev/null 2>&1 && break
        alive "$SERVER_PID" || die "strom exited: $(tail -5 "$dir/server.log")"
        sleep 0.2
    done
    DVR_PID=""
    for _ in $(seq 100); do
        DVR_PID=$(curl -sf "$API/workers" 2>/dev/null | python3 -c 'import json,sys
for w in json.load(sys.stdin):
    if w.get("kind") == "dvr" and w.get("state") == "ready": print(w["pid"])' 2>/dev/null || true)
        [[ -n $DVR_PID ]] && break
        sleep 0.2
    done
    [[ -n $DVR_PID ]] || die "no ready dvr worker in /manage/workers: $(tail -5 "$dir/server.log")"
    log "strom $SERVER_PID (dvr worker $DVR_PID): rtmp $RTMP_PORT, management $MGMT_PORT"
}

live_count() { # streams of app live in rtmp_status
    curl -sf "$API/rtmp_status" 2>/dev/null | python3 -c 'import json,sys
print(sum(len(a.get("streams", [])) for a in json.load(sys.stdin) if a.get("app") == "live"))' 2>/dev/null || echo 0
}

# archive_field STREAM FIELD: a field of the stream's dvr_status entry ("" if none)
archive_field() {
    curl -sf "$API/dvr_status/live/$1" 2>/dev/null | python3 -c 'import json,sys
a = json.load(sys.stdin)
print(a[0].get(sys.argv[1], "") if a else "")' "$2" 2>/dev/null || true
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
log "load average before the run: $LOAD_BEFORE; ${FREE_GB} GB free; work dir $TMP"
log "encoding the 20 s source clip"
ffmpeg -nostdin -loglevel error -y -f lavfi -i testsrc2=size=1280x720:rate=25 \
    -f lavfi -i sine=frequency=440:sample_rate=48000 -t 20 \
    -c:v libx264 -preset veryfast -g 50 -keyint_min 50 -sc_threshold 0 -pix_fmt yuv420p \
    -b:v 1400k -maxrate 1400k -bufsize 1400k -c:a aac -b:a 96k -f flv "$TMP/clip.flv" ||
    die "ffmpeg could not encode the source clip"
read -r CLIP_PAYLOAD CLIP_SECS MEDIA_BPS < <(python3 "$HERE/dvrbench.py" payload "$TMP/clip.flv")
MEDIA_MBPS=$(awk -v b="$MEDIA_BPS" 'BEGIN { printf "%.3f", b * 8 / 1e6 }')
log "clip: $CLIP_PAYLOAD payload bytes in $CLIP_SECS s = $MEDIA_MBPS Mbit/s of media"

# ---------------------------------------------------------------------------------------
run_record() {
    local i pubs=() recs=() dead=0
    # Both recorders write N streams for the warm-up, the window and the ramps.
    need_space "$(awk -v n="$N" -v r="$MEDIA_BPS" -v s="$((WARMUP + DURATION + 15))" 'BEGIN { printf "%.0f", 2 * n * r * 1.05 * s }')" "recording $N streams"
    wait_quiet
    start_strom record
    mkdir -p "$TMP/ffmpeg-rec"
    log "recording: $N publishers"
    for ((i = 0; i < N; i++)); do
        ffmpeg -nostdin -loglevel error -re -stream_loop -1 -i "$TMP/clip.flv" -c copy \
            -f flv "rtmp://127.0.0.1:$RTMP_PORT/live/s$i" >"$STROM_DIR/pub$i.log" 2>&1 &
        pubs+=($!); PIDS+=($!)
        ((i % 10 == 9)) && sleep 0.5
    done
    for _ in $(seq 150); do
        (($(live_count) >= N)) && break
        sleep 0.4
    done
    local live; live=$(live_count)
    ((live >= N)) || die "only $live of $N streams live after 60 s: $(tail -3 "$STROM_DIR/server.log")"
    log "recording: $N ffmpeg -c copy segment recorders (RTMP play from strom)"
    for ((i = 0; i < N; i++)); do
        ffmpeg -nostdin -loglevel error -i "rtmp://127.0.0.1:$RTMP_PORT/live/s$i" -c copy -map 0 \
            -f segment -segment_time "$SEGMENT" -segment_format mp4 -reset_timestamps 1 \
            "$TMP/ffmpeg-rec/s${i}_%05d.mp4" >"$STROM_DIR/rec$i.log" 2>&1 &
        recs+=($!); PIDS+=($!)
    done
    log "recording: warm-up ${WARMUP}s"
    sleep "$WARMUP"
    local groups=("dvr=$DVR_PID" "strom=$SERVER_PID" "ffmpeg=$(IFS=,; echo "${recs[*]}")"
        "publishers=$(IFS=,; echo "${pubs[*]}")")
    local c0 c1
    log "recording: window ${DURATION}s"
    c0=$(head -1 /proc/stat)
    curl -sf "$API/sessions" >"$TMP/sessions.0.json" || die "no /manage/sessions"
    python3 "$HERE/dvrbench.py" snap "${groups[@]}" -- "strom=$DVR_ROOT" "ffmpeg=$TMP/ffmpeg-rec" >"$TMP/rec.0.json"
    sleep "$DURATION"
    python3 "$HERE/dvrbench.py" snap "${groups[@]}" -- "strom=$DVR_ROOT" "ffmpeg=$TMP/ffmpeg-rec" >"$TMP/rec.1.json"
    curl -sf "$API/sessions" >"$TMP/sessions.1.json" || die "no /manage/sessions"
    c1=$(head -1 /proc/stat)
    REC_BUSY=$(cores_busy "$c0" "$c1")
    REC_NCPU=$(nproc)
    REC_LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
    for p in "${pubs[@]}" "${recs[@]}"; do alive "$p" || ((dead += 1)); done
    alive "$SERVER_PID" || die "strom exited: $(tail -5 "$STROM_DIR/server.log")"
    alive "$DVR_PID" || log "the dvr worker $DVR_PID is gone (restarted?): its figures are incomplete"
    REC_DEAD=$dead
    # The media of the window: what strom sent to the N ffmpeg recorders (RTMP bytes, a
    # few % above the elementary payload; the DVR got the same frames); the clip's payload
    # rate gives a cross-check.
    read -r REC_MEDIA REC_PLAYERS REC_PLAYER_DROPS < <(python3 "$HERE/dvrbench.py" sessions "$TMP/sessions.0.json" "$TMP/sessions.1.json")
    ((REC_MEDIA > 0)) || die "no RTMP player bytes in /manage/sessions"
    REC=$(python3 "$HERE/dvrbench.py" report "$TMP/rec.0.json" "$TMP/rec.1.json" "$N" "$REC_MEDIA")
    REC_PAYLOAD_EST=$(awk -v n="$N" -v b="$MEDIA_BPS" -v s="$(jget "$REC" secs)" 'BEGIN { printf "%.0f", n * b * s }')
    REC_DVR_DROPS=$(grep -c 'reader too slow' "$STROM_DIR/server.log" || true)
    echo "$REC" >"$TMP/rec.report.json"
    REC_ARCHIVES=$(curl -sf "$API/dvr_status" | python3 -c 'import json,sys
print(sum(1 for a in json.load(sys.stdin) if a.get("duration", 0) > 0))' 2>/dev/null || echo "?")
    REC_FFMPEG_FILES=$(find "$TMP/ffmpeg-rec" -name '*.mp4' | wc -l)
    stop_all
    rm -rf "$TMP/ffmpeg-rec" "$STROM_DIR/data"
}

# ---------------------------------------------------------------------------------------
run_export() {
    local rate=() pub duration i url out
    # strom's archive and one export at once, then the peer's segments and its output.
    need_space "$(awk -v r="$MEDIA_BPS" -v s="$HOUR" 'BEGIN { printf "%.0f", 2 * r * 1.05 * s }')" "the export part"
    wait_quiet
    start_strom export
    ((HOUR_READRATE > 0)) && rate=(-readrate "$HOUR_READRATE")
    log "export: publishing ${HOUR}s of the clip ${rate[*]:-without -re} into strom (live/hour)"
    python3 "$HERE/dvrbench.py" timed "$TMP/hour-publish.json" -- \
        ffmpeg -nostdin -loglevel error "${rate[@]}" -stream_loop -1 -i "$TMP/clip.flv" -t "$HOUR" \
        -c copy -f flv "rtmp://127.0.0.1:$RTMP_PORT/live/hour" 2>"$STROM_DIR/hour-publish.log" ||
        die "the one-hour publish failed: $(tail -3 "$STROM_DIR/hour-publish.log")"
    HOUR_PUBLISH_S=$(jget "$(cat "$TMP/hour-publish.json")" wall_s)
    duration=""
    for _ in $(seq 150); do
        if (($(live_count) == 0)); then
            duration=$(archive_field hour duration)
            [[ -n $duration ]] && ((duration >= HOUR - 2 * SEGMENT)) && break
        fi
        sleep 0.4
    done
    HOUR_ARCHIVE_S=$(archive_field hour duration)
    HOUR_ARCHIVE_BYTES=$(archive_field hour size)
    HOUR_PERIODS=$(archive_field hour periods)
    log "export: archive of live/hour: ${HOUR_ARCHIVE_S:-?} s, ${HOUR_ARCHIVE_BYTES:-?} bytes, ${HOUR_PERIODS:-?} periods (published in ${HOUR_PUBLISH_S}s)"
    [[ -n $HOUR_ARCHIVE_S ]] && ((HOUR_ARCHIVE_S >= HOUR - 2 * SEGMENT)) ||
        die "the archive holds ${HOUR_ARCHIVE_S:-no} seconds, not ~$HOUR: frames were lost (try --hour-readrate 20): $(tail -5 "$STROM_DIR/server.log")"

    url=$API/dvr/export_mp4/live/hour
    EXPORT_ROWS=()
    local k target label t0 t1 cpu code bytes
    for target in null file; do
        python3 "$HERE/dvrbench.py" evict "$DVR_ROOT"
        for k in 1 2 3; do
            out=/dev/null
            [[ $target == file ]] && out=$TMP/export.mp4
            rm -f "$TMP/export.mp4"
            t0=$(python3 "$HERE/dvrbench.py" snap "strom=$SERVER_PID")
            python3 "$HERE/dvrbench.py" timed "$TMP/exp.json" -- \
                curl -sS -f -o "$out" -w '%{http_code} %{size_download}\n' "$url" >"$TMP/exp.curl" ||
                die "export failed: $(cat "$TMP/exp.curl") $(tail -5 "$STROM_DIR/server.log")"
            t1=$(python3 "$HERE/dvrbench.py" snap "strom=$SERVER_PID")
            cpu=$(awk -v a="$(jget "$t0" groups.strom.ticks)" -v b="$(jget "$t1" groups.strom.ticks)" -v hz="$(getconf CLK_TCK)" \
                'BEGIN { printf "%.2f", (b - a) / hz }')
            read -r code bytes <"$TMP/exp.curl"
            local wall; wall=$(jget "$(cat "$TMP/exp.json")" wall_s)
            label="curl -o $out"; [[ $target == file ]] && label="curl -o export.mp4"
            EXPORT_ROWS+=("| strom export_mp4, $label | $k ($([[ $k == 1 ]] && echo "archive evicted" || echo "warm cache")) | $(fmt "$(awk -v b="$bytes" 'BEGIN { print b / 1e6 }')" 1) | $(fmt "$wall" 2) | $(fmt "$(awk -v b="$bytes" -v w="$wall" 'BEGIN { print b / 1e6 / w }')" 0) | HTTP $code; strom tree CPU $cpu s, curl CPU $(jget "$(cat "$TMP/exp.json")" cpu_s) s |")
            log "export: strom to $out run $k: $bytes bytes in ${wall}s"
        done
    done
    STROM_EXPORT_DURATION=$(ffprobe -v error -show_entries format=duration -of csv=p=0 "$TMP/export.mp4")
    STROM_EXPORT_BOXES=$(python3 - "$TMP/export.mp4" <<'EOF'
import struct, sys
with open(sys.argv[1], "rb") as f:
    kinds, at = [], 0
    while True:
        f.seek(at)
        head = f.read(16)
        if len(head) < 8: break
        size, kind = struct.unpack(">I4s", head[:8])
        if size == 1: size = struct.unpack(">Q", head[8:16])[0]
        kinds.append(kind.decode("latin-1"))
        if size < 8: break
        at += size
print(" ".join(kinds))
EOF
)
    rm -f "$TMP/export.mp4"
    # Free the disk before the peer's turn (the machine's disk is shared).
    stop_all
    rm -rf "$STROM_DIR/data"

    log "export: ffmpeg writes the same ${HOUR}s as ${SEGMENT}s MP4 segments (peer input)"
    mkdir -p "$TMP/hour-seg"
    python3 "$HERE/dvrbench.py" timed "$TMP/hour-seg.json" -- \
        ffmpeg -nostdin -loglevel error -stream_loop -1 -i "$TMP/clip.flv" -t "$HOUR" -c copy -map 0 \
        -f segment -segment_time "$SEGMENT" -segment_format mp4 -reset_timestamps 1 \
        "$TMP/hour-seg/h_%05d.mp4" || die "ffmpeg could not write the peer's segments"
    HOUR_SEG_S=$(jget "$(cat "$TMP/hour-seg.json")" wall_s)
    HOUR_SEG_BYTES=$(du -sb "$TMP/hour-seg" | cut -f1)
    for f in "$TMP"/hour-seg/h_*.mp4; do echo "file '$f'"; done >"$TMP/hour-seg.txt"

    python3 "$HERE/dvrbench.py" evict "$TMP/hour-seg"
    for k in 1 2 3; do
        rm -f "$TMP/concat.mp4"
        python3 "$HERE/dvrbench.py" timed "$TMP/cat.json" -- \
            ffmpeg -nostdin -loglevel error -f concat -safe 0 -i "$TMP/hour-seg.txt" -c copy -map 0 \
            -movflags +faststart "$TMP/concat.mp4" || die "ffmpeg concat failed"
        local wall bytes; wall=$(jget "$(cat "$TMP/cat.json")" wall_s); bytes=$(stat -c %s "$TMP/concat.mp4")
        EXPORT_ROWS+=("| ffmpeg -f concat -c copy -movflags +faststart → concat.mp4 | $k ($([[ $k == 1 ]] && echo "segments evicted" || echo "warm cache")) | $(fmt "$(awk -v b="$bytes" 'BEGIN { print b / 1e6 }')" 1) | $(fmt "$wall" 2) | $(fmt "$(awk -v b="$bytes" -v w="$wall" 'BEGIN { print b / 1e6 / w }')" 0) | ffmpeg CPU $(jget "$(cat "$TMP/cat.json")" cpu_s) s |")
        log "export: ffmpeg concat run $k: $bytes bytes in ${wall}s"
    done
    PEER_EXPORT_DURATION=$(ffprobe -v error -show_entries format=duration -of csv=p=0 "$TMP/concat.mp4")
    # What faststart costs ffmpeg: the same concat with moov after mdat (warm cache).
    rm -f "$TMP/concat.mp4"
    python3 "$HERE/dvrbench.py" timed "$TMP/cat.json" -- \
        ffmpeg -nostdin -loglevel error -f concat -safe 0 -i "$TMP/hour-seg.txt" -c copy -map 0 \
        "$TMP/concat.mp4" || die "ffmpeg concat failed"
    local wall bytes; wall=$(jget "$(cat "$TMP/cat.json")" wall_s); bytes=$(stat -c %s "$TMP/concat.mp4")
    EXPORT_ROWS+=("| ffmpeg -f concat -c copy, no faststart (moov last) → concat.mp4 | 4 (warm cache) | $(fmt "$(awk -v b="$bytes" 'BEGIN { print b / 1e6 }')" 1) | $(fmt "$wall" 2) | $(fmt "$(awk -v b="$bytes" -v w="$wall" 'BEGIN { print b / 1e6 / w }')" 0) | ffmpeg CPU $(jget "$(cat "$TMP/cat.json")" cpu_s) s |")
    log "export: ffmpeg concat without faststart: $bytes bytes in ${wall}s"
    rm -rf "$TMP/concat.mp4" "$TMP/hour-seg"
}

if [[ $ONLY != export ]]; then run_record; fi
if [[ $ONLY != record ]]; then run_export; fi
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

echo "### DVR recording and export"
echo
printf '%s cores (%s), %s, load average before / after: %s / %s. Clip: 1280x720 25 fps H.264 + AAC, %s Mbit/s of media (payload), 2 s GOP, 20 s, FLV; strom Dvr.segment_duration_secs %s, ffmpeg -segment_time %s.\n' \
    "$(nproc)" "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "$(date -u '+%F %H:%M UTC')" \
    "$LOAD_BEFORE" "$LOAD_AFTER" "$MEDIA_MBPS" "$SEGMENT" "$SEGMENT"
if [[ $ONLY != export ]]; then
    g() { jget "$REC" "groups.$1.$2"; }
    d() { jget "$REC" "dirs.$1.$2"; }
    secs=$(jget "$REC" secs)
    media=$(jget "$REC" media_bytes)
    echo
    echo "Recording $N streams at once, window ${secs} s after ${WARMUP} s warm-up (machine busy ${REC_BUSY}% of all ${REC_NCPU} cores in the window, of which ≈ $(awk -v b="$REC_BUSY" -v n="$REC_NCPU" -v s="$(g strom cpu_pct)" -v f="$(g ffmpeg cpu_pct)" -v p="$(g publishers cpu_pct)" 'BEGIN { x = b * n - s - f - p; printf "%.0f", (x < 0 ? 0 : x) }')% of one core was not this benchmark; load average at its end $REC_LOAD). Media in the window (the denominator): $(fmt "$(awk -v m="$media" 'BEGIN { print m / 1e6 }')" 1) MB sent by strom to the $REC_PLAYERS ffmpeg recorders over RTMP (/manage/sessions bytes_sent; the clip's payload rate gives $(fmt "$(awk -v m="$REC_PAYLOAD_EST" 'BEGIN { print m / 1e6 }')" 1) MB: $N × $MEDIA_MBPS Mbit/s × ${secs} s). $REC_DEAD publisher/recorder processes died in the window; frames dropped: $REC_PLAYER_DROPS by strom's RTMP players (dropped_frames), $REC_DVR_DROPS 'reader too slow' warnings of the dvr worker over the whole recording; $REC_ARCHIVES archives in dvr_status, $REC_FFMPEG_FILES ffmpeg MP4 files."
    echo
    echo "| recorder | processes | CPU % of one core (system part) | CPU ms per stream-second | write_bytes (MB) | write amplification (write_bytes / media) | write_bytes / clip payload estimate | wchar / media | output dir growth (MB, apparent) | growth / media |"
    echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    pl() { awk -v w="$1" -v p="$REC_PAYLOAD_EST" 'BEGIN { printf "%.3f", w / p }'; }
    mb() { fmt "$(awk -v b="$1" 'BEGIN { print b / 1e6 }')" 1; }
    echo "| strom dvr worker | $(g dvr procs) | $(g dvr cpu_pct) ($(g dvr sys_pct)) | $(g dvr cpu_ms_per_stream_s) | $(mb "$(g dvr write_bytes)") | $(g dvr write_amp) | $(pl "$(g dvr write_bytes)") | $(g dvr wchar_amp) | $(mb "$(d strom apparent)") | $(d strom apparent_amp) |"
    echo "| ffmpeg -c copy -f segment × $N | $(g ffmpeg procs) | $(g ffmpeg cpu_pct) ($(g ffmpeg sys_pct)) | $(g ffmpeg cpu_ms_per_stream_s) | $(mb "$(g ffmpeg write_bytes)") | $(g ffmpeg write_amp) | $(pl "$(g ffmpeg write_bytes)") | $(g ffmpeg wchar_amp) | $(mb "$(d ffmpeg apparent)") | $(d ffmpeg apparent_amp) |"
    echo "| whole strom tree (ingest of $N publishers, $N RTMP players, DVR) | $(g strom procs) | $(g strom cpu_pct) ($(g strom sys_pct)) | $(g strom cpu_ms_per_stream_s) | $(mb "$(g strom write_bytes)") | $(g strom write_amp) | $(pl "$(g strom write_bytes)") | $(g strom wchar_amp) | | |"
    echo "| the $N publishers (ffmpeg -re -c copy) | $(g publishers procs) | $(g publishers cpu_pct) ($(g publishers sys_pct)) | $(g publishers cpu_ms_per_stream_s) | | | | | | |"
    echo
    echo "The dvr worker's CPU by thread (% of one core, system part): $(python3 -c 'import json,sys
t = json.loads(sys.argv[1])["groups"]["dvr"].get("threads", {})
rows = sorted(t.items(), key=lambda kv: -kv[1]["cpu_pct"])
print(", ".join("%s threads %s (%s)" % (k, v["cpu_pct"], v["sys_pct"]) for k, v in rows) or "n/a")' "$REC")."
    echo
    echo "cancelled_write_bytes: strom dvr $(g dvr cancelled_write_bytes), ffmpeg $(g ffmpeg cancelled_write_bytes); allocated growth / media: strom $(d strom allocated_amp), ffmpeg $(d ffmpeg allocated_amp)."
fi
if [[ $ONLY != record ]]; then
    echo
    echo "Export of one hour: strom's archive of live/hour: ${HOUR_ARCHIVE_S} s, ${HOUR_ARCHIVE_BYTES} bytes, ${HOUR_PERIODS} period(s), recorded from a publish of ${HOUR} s of media that took ${HOUR_PUBLISH_S} s; the peer's input: ${HOUR_SEG_BYTES} bytes of ${SEGMENT} s MP4 segments, written by ffmpeg in ${HOUR_SEG_S} s. ffprobe duration of the outputs: strom $STROM_EXPORT_DURATION s (top-level boxes: $STROM_EXPORT_BOXES), ffmpeg $PEER_EXPORT_DURATION s."
    echo
    echo "| export | run | output MB | wall s | MB/s | notes |"
    echo "|---|---|---:|---:|---:|---|"
    printf '%s\n' "${EXPORT_ROWS[@]}"
fi
echo
echo "Command: \`$CMDLINE\`"
