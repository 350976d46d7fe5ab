#!/usr/bin/env bash
# HTTP/2 against HTTP/1.1 on strom's delivery port (issue 47), side by side in one run:
#
# 1. held LL-HLS blocking reloads: VIEWERS viewers each asking for the next part of a live
#    LL-HLS playlist over and over (every request held until its part exists), over
#    HTTP/1.1 (bench/ll_hls/blocking_viewers.py: a connection each) and over h2c
#    (blocking_viewers_h2.py: STREAMS viewers multiplexed per connection); strom's CPU
#    (its whole process tree, publishing and packaging included) and answers per second.
# 2. segment serving: h2load (nghttp2-client) fetching one 2 s fMP4 segment REQUESTS
#    times over CONNECTIONS connections, with --h1 and as h2c (STREAMS_PER_CONN streams at
#    once per connection); requests per second and per core-second of strom's CPU.
#
# strom (release build, pinned to core 0, part target 334 ms, 2 s segments) with one
# ffmpeg publisher (320x240 testsrc2 + sine, x264 ultrafast zerolatency, 2 s GOP) on core
# 1; the load generators on core 1.
#
#   bash bench/http2/run.sh [--no-build] [--viewers 1000] [--streams 100] [--window 20]
#                           [--requests 40000] [--connections 50]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/bench/http2
STROM_BIN=${STROM_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/strom}
BUILD=1
VIEWERS=1000
STREAMS=100
WINDOW=20
REQUESTS=40000
CONNECTIONS=50
HTTP_PORT=18530
MGMT_PORT=18531
RTMP_PORT=19530

while (($#)); do
    case $1 in
        --no-build) BUILD=0 ;;
        --viewers) VIEWERS=$2; shift ;;
        --streams) STREAMS=$2; shift ;;
        --window) WINDOW=$2; shift ;;
        --requests) REQUESTS=$2; shift ;;
        --connections) CONNECTIONS=$2; shift ;;
        -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

die() { echo "run.sh: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || die "$1 not found: install the Debian package $2"; }
need ffmpeg ffmpeg
need h2load nghttp2-client
need curl curl
need python3 python3
/usr/bin/python3 -c 'import h2' 2>/dev/null || die "python h2 missing: install the Debian package python3-h2"

if ((BUILD)); then
    (cd "$ROOT" && cargo build --release -p strom >&2)
fi
[[ -x $STROM_BIN ]] || die "$STROM_BIN missing (cargo build --release -p strom)"

dir=$(mktemp -d)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

# shellcheck source=bench/strom.sh
source "$ROOT/bench/strom.sh"
cat >"$dir/rules.conf" <<RULES
{"RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": $RTMP_PORT}]},
 "Delivery": {"outputs": ["HLS", "LLHLS"], "segment_duration_secs": 2}}
RULES
strom_start "$dir" "$HTTP_PORT" "$MGMT_PORT" 0 || die "strom did not start"
PIDS+=("$STROM_PID")

taskset -c 1 ffmpeg -hide_banner -loglevel error -re -f lavfi -i testsrc2=size=320x240:rate=30 \
    -f lavfi -i sine=frequency=440:sample_rate=48000 -c:v libx264 -preset ultrafast -tune zerolatency \
    -g 60 -sc_threshold 0 -pix_fmt yuv420p -c:a aac -b:a 64k -f flv \
    "rtmp://127.0.0.1:$RTMP_PORT/live/ll" </dev/null 2>"$dir/publisher.log" &
PIDS+=("$!")

playlist=http://127.0.0.1:$HTTP_PORT/live/ll/chunks_fmp4.m3u8
for _ in $(seq 150); do
    n=$(curl -s "$playlist" | grep -c '^#EXTINF' || true)
    ((n >= 3)) && break
    sleep 0.2
done
((n >= 3)) || die "no playlist: $(tail -3 "$dir/publisher.log" "$dir/strom.log")"

cpu() { # strom's process tree, seconds of CPU
    python3 -c "import sys; sys.path.insert(0, '$ROOT/bench/ll_hls'); from blocking_viewers import tree_cpu_secs; print(tree_cpu_secs($STROM_PID))"
}

echo "## HTTP/2 against HTTP/1.1 ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "Held LL-HLS blocking reloads, $VIEWERS viewers, ${WINDOW} s window:"
echo
echo "| protocol | connections | answers/s | strom CPU % | answers per core-second | errors | answers without the part asked |"
echo "|---|---:|---:|---:|---:|---:|---:|"
row() { # label json
    python3 -c 'import json, sys
r = json.loads(sys.argv[2])
print("| {} | {} | {} | {} | {} | {} | {} |".format(sys.argv[1], r.get("connections", r["connected"]), r["answers_per_sec"],
      r["server_cpu_percent"], r["answers_per_core_sec"], r["errors"] + r["connect_failed"], r["without_asked_part"]))' "$1" "$2"
}
h1=$(taskset -c 1 python3 "$ROOT/bench/ll_hls/blocking_viewers.py" 127.0.0.1 "$HTTP_PORT" /live/ll/chunks_fmp4.m3u8 "$VIEWERS" 8 "$WINDOW" "$STROM_PID")
echo "HTTP/1.1 held: $h1" >&2
row "HTTP/1.1" "$h1"
sleep 3
h2=$(taskset -c 1 /usr/bin/python3 "$HERE/blocking_viewers_h2.py" 127.0.0.1 "$HTTP_PORT" /live/ll/chunks_fmp4.m3u8 "$VIEWERS" 8 "$WINDOW" "$STROM_PID" "$STREAMS")
echo "HTTP/2 held: $h2" >&2
row "HTTP/2 (h2c, $STREAMS streams per connection)" "$h2"

segment=$(curl -s "$playlist" | grep -o 'seg_[0-9]*\.m4s' | tail -1)
url=http://127.0.0.1:$HTTP_PORT/live/ll/$segment
bytes=$(curl -s "$url" | wc -c)
echo
echo "Segment serving: $REQUESTS requests for one segment ($bytes bytes) over $CONNECTIONS connections:"
echo
echo "| protocol | requests/s | strom CPU s | requests per core-second | failed |"
echo "|---|---:|---:|---:|---:|"
serve() { # label h2load-options...
    local label=$1 before after out rps failed
    shift
    before=$(cpu)
    out=$(taskset -c 1 h2load "$@" -n "$REQUESTS" -c "$CONNECTIONS" "$url" 2>&1)
    after=$(cpu)
    echo "$out" | grep -E 'finished in|requests:' >&2
    rps=$(echo "$out" | sed -n 's/.*finished in .*, \([0-9.]*\) req\/s.*/\1/p')
    failed=$(echo "$out" | sed -n 's/^requests: .* \([0-9]*\) failed.*/\1/p')
    python3 -c 'import sys
label, rps, before, after, n, failed = sys.argv[1:7]
cpu = float(after) - float(before)
print("| {} | {:.0f} | {:.2f} | {:.0f} | {} |".format(label, float(rps), cpu, int(n) / cpu if cpu > 0 else 0, failed))' \
        "$label" "${rps:-0}" "$before" "$after" "$REQUESTS" "${failed:-?}"
}
serve "HTTP/1.1" --h1
serve "HTTP/2 (h2c, 10 streams per connection)" -m 10
