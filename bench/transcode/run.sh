#!/usr/bin/env bash
# Live transcoding (issue 44): the CPU one source's ABR ladder costs in strom against
# ffmpeg making the same ladder alone, side by side in one run.
#
# One ffmpeg (core 1) publishes a 1280x720 30 fps source (testsrc2, x264 ultrafast, a
# keyframe every 2 s, AAC) over RTMP to strom (release build, core 0 and 1 shared with
# the others), whose `Transcoding` ladder makes 480p (1200 kbit/s) and 240p (400 kbit/s)
# with x264 veryfast, audio passed through. At the same time a second ffmpeg (the peer)
# pulls the same source from strom over RTMP and makes the same two renditions with the
# same x264 settings, writing MPEG-TS to /dev/null. After --settle s, the CPU each side
# uses over --window s is read from /proc: strom's side is its ffmpeg child plus the
# transcoder worker (the TS it feeds ffmpeg, the renditions it demuxes and publishes),
# the peer's side is its ffmpeg. Both run at real time (the renditions' `speed` in
# `/manage/transcodes` is printed), so CPU per media second = CPU seconds / window.
#
#   bash bench/transcode/run.sh [--no-build] [--settle 10] [--window 30] [--keep DIR]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=1 SETTLE=10 WINDOW=30 KEEP=
while [[ $# -gt 0 ]]; do
    case $1 in
    --no-build) BUILD= ;;
    --settle) SETTLE=$2; shift ;;
    --window) WINDOW=$2; shift ;;
    --keep) KEEP=$2; shift ;;
    *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done
for tool in ffmpeg curl taskset python3; do
    command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done
[[ -n $BUILD ]] && (cd "$ROOT" && cargo build --release -p strom)
STROM_BIN=${STROM_BIN:-$ROOT/target/release/strom}
# shellcheck source=bench/strom.sh
source "$ROOT/bench/strom.sh"

DIR=${KEEP:-$(mktemp -d)}
mkdir -p "$DIR"
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
HTTP=$(port) MGMT=$(port) RTMP=$(port)
LADDER='{"name": "480p", "width": 854, "height": 480, "video_bitrate": 1200, "preset": "veryfast"},
         {"name": "240p", "width": 426, "height": 240, "video_bitrate": 400, "preset": "veryfast"}'
cat >"$DIR/rules.conf" <<RULES
{"RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": $RTMP}]},
 "Delivery": {"outputs": []},
 "Transcoding": {"ladders": [{"app": "live", "stream": "src", "renditions": [$LADDER]}]}}
RULES
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    [[ -n ${STROM_PID:-} ]] && kill "$STROM_PID" 2>/dev/null || true
    wait 2>/dev/null || true
    [[ -z $KEEP ]] && rm -rf "$DIR"
}
trap cleanup EXIT
strom_start "$DIR" "$HTTP" "$MGMT" 0,1

taskset -c 1 ffmpeg -hide_banner -loglevel error -re -f lavfi -i testsrc2=size=1280x720:rate=30 \
    -f lavfi -i sine=frequency=440:sample_rate=48000 -c:v libx264 -preset ultrafast -g 60 \
    -pix_fmt yuv420p -c:a aac -b:a 128k -t 3600 -f flv "rtmp://127.0.0.1:$RTMP/live/src" \
    2>"$DIR/source.log" &
PIDS+=($!)
rendition() { # WIDTH HEIGHT KBPS: the x264 settings strom's transcoder uses
    echo "-map 0:v:0 -map 0:a:0? -c:v libx264 -preset veryfast -profile:v main -pix_fmt yuv420p
          -vf scale=$1:$2 -b:v ${3}k -maxrate ${3}k -bufsize $(($3 * 2))k
          -force_key_frames source -sc_threshold 0 -g 100000 -c:a copy -f mpegts /dev/null"
}
sleep 3
# shellcheck disable=SC2046
ffmpeg -hide_banner -nostdin -y -loglevel error -i "rtmp://127.0.0.1:$RTMP/live/src" -copyts \
    $(rendition 854 480 1200) $(rendition 426 240 400) 2>"$DIR/peer.log" &
PEER=$!
PIDS+=("$PEER")
sleep "$SETTLE"

ticks() { awk '{print $14 + $15}' <(sed 's/.*) //; s/^/x x /' "/proc/$1/stat"); }
WORKER=$(curl -s "http://127.0.0.1:$MGMT/manage/workers" | python3 -c 'import json,sys; print(next(w["pid"] for w in json.load(sys.stdin) if w["kind"] == "transcoder"))')
STROM_FFMPEG=$(curl -s "http://127.0.0.1:$MGMT/manage/transcodes" | python3 -c 'import json,sys; print(json.load(sys.stdin)[0]["pid"])')
[[ -n $STROM_FFMPEG && $STROM_FFMPEG != None ]] || { echo "no transcode running: $(tail -5 "$DIR/strom.log")" >&2; exit 1; }
w0=$(ticks "$WORKER") f0=$(ticks "$STROM_FFMPEG") p0=$(ticks "$PEER")
sleep "$WINDOW"
w1=$(ticks "$WORKER") f1=$(ticks "$STROM_FFMPEG") p1=$(ticks "$PEER")
STATUS=$(curl -s "http://127.0.0.1:$MGMT/manage/transcodes")
python3 - "$WINDOW" "$((w1 - w0))" "$((f1 - f0))" "$((p1 - p0))" "$STATUS" <<'PY'
import json, sys
window, worker, ffmpeg, peer = float(sys.argv[1]), *(int(v) / 100.0 for v in sys.argv[2:5])
status = json.loads(sys.argv[5])[0]
speeds = ", ".join(f'{r["name"]} {r["speed"]:.2f}x' for r in status["renditions"])
strom = worker + ffmpeg
print(f"window {window:.0f} s; strom's renditions at {speeds}; restarts {status['restarts']}\n")
print("| side | CPU s in the window | CPU per media second | transcodes per core at real time |")
print("|---|---|---|---|")
for name, cpu in [("ffmpeg alone (peer)", peer), ("strom: its ffmpeg", ffmpeg),
                  ("strom: transcoder worker", worker), ("strom: total", strom)]:
    per = cpu / window
    print(f"| {name} | {cpu:.2f} | {per:.3f} | {1 / per if per else float('inf'):.2f} |")
print(f"\nstrom / ffmpeg alone: {strom / peer:.3f}x")
PY
