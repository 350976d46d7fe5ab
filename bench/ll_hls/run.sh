#!/usr/bin/env bash
# LL-HLS benchmark (issue 15): glass-to-glass latency of regular HLS, LL-HLS and DASH in
# headless Chromium, and LL-HLS blocking playlist reloads per core with 1,000 viewers.
#
# strom (release build) runs pinned to core 0 with two streams, each published live by
# ffmpeg (640x360@25 testsrc2 + sine, x264 ultrafast zerolatency, a keyframe every 2 s,
# AAC) on core 1: `live/plain` with outputs HLS + DASH and `live/ll` with HLS + LLHLS,
# both in 2 s segments (LL-HLS parts: the default 500 ms).
#
# 1. latency: bench/ll_hls/latency.mjs opens the player pages of tests/browser in
#    Chromium (core 1): hls.js on live/plain (fMP4), hls.js in lowLatencyMode on live/ll,
#    dash.js on live/plain's manifest.mpd; after SETTLE s of playback it samples for
#    WINDOW s "wall clock - wall-clock time of the frame playing" (hls.playingDate /
#    dash.js timeAsUTC(), both from strom's program date-times: the frame's arrival at
#    strom) and the player's own latency figure.
# 2. blocking reloads: bench/ll_hls/blocking_viewers.py (core 1) holds VIEWERS
#    connections, each asking for the next part of live/ll's playlist again and again
#    (`_HLS_msn`/`_HLS_part`), and reports answers per second and strom's CPU (its whole
#    process tree, publishing and packaging included) over a WINDOW s window.
#
#   bash bench/ll_hls/run.sh [--no-build] [--viewers-only] [--viewers 1000] [--window 30]
#                            [--settle 10]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/bench/ll_hls
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
STROM_BIN=${STROM_BIN:-$TARGET_DIR/release/strom}
BUILD=1
LATENCY=1
VIEWERS=1000
WINDOW=30
SETTLE=10
RTMP_PORT=19471
HTTP_PORT=18471
MGMT_PORT=18472
PAGE_PORT=18473

while (($#)); do
    case $1 in
        --no-build) BUILD=0 ;;
        --viewers-only) LATENCY=0 ;;
        --viewers) VIEWERS=$2; shift ;;
        --window) WINDOW=$2; shift ;;
        --settle) SETTLE=$2; shift ;;
        --strom-bin) STROM_BIN=$2; shift ;;
        -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

die() { echo "run.sh: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || die "$1 not found: install the Debian package $2"; }
need ffmpeg ffmpeg
need chromium chromium
need node nodejs
need python3 python3
need curl curl
[[ -e $ROOT/tests/browser/node_modules/hls.js/dist/hls.min.js ]] ||
    die "run npm ci --prefix tests/browser first"

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

ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"
cat >"$dir/rules.conf" <<EOF
{"RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": $RTMP_PORT}]},
 "Delivery": {"outputs": ["HLS", "DASH"], "segment_duration_secs": 2,
   "streams": [{"app": "live", "stream": "ll", "outputs": ["HLS", "LLHLS"]}]}}
EOF
# shellcheck source=bench/strom.sh
source "$ROOT/bench/strom.sh"
strom_start "$dir" "$HTTP_PORT" "$MGMT_PORT" 0 || die "strom did not start"
PIDS+=("$STROM_PID")

for stream in plain ll; do
    taskset -c 1 ffmpeg -hide_banner -loglevel error -re \
        -f lavfi -i testsrc2=size=640x360:rate=25 -f lavfi -i sine=frequency=440:sample_rate=48000 \
        -c:v libx264 -preset ultrafast -tune zerolatency -g 50 -keyint_min 50 -sc_threshold 0 \
        -pix_fmt yuv420p -b:v 800k -c:a aac -b:a 64k -t 3600 \
        -f flv "rtmp://127.0.0.1:$RTMP_PORT/live/$stream" </dev/null >"$dir/ffmpeg_$stream.log" 2>&1 &
    PIDS+=("$!")
done

mkdir "$dir/pages"
ln -s "$ROOT/tests/browser/index.html" "$ROOT/tests/browser/dash.html" "$dir/pages/"
ln -s "$ROOT/tests/browser/node_modules/hls.js/dist/hls.min.js" "$dir/pages/"
ln -s "$ROOT/tests/browser/node_modules/dashjs/dist/modern/umd/dash.all.min.js" "$dir/pages/"
(cd "$dir/pages" && exec taskset -c 1 python3 -m http.server "$PAGE_PORT" --bind 127.0.0.1 >/dev/null 2>&1) &
PIDS+=("$!")

base=http://127.0.0.1:$HTTP_PORT/live
for _ in $(seq 300); do
    ll=$(curl -s "$base/ll/chunks_fmp4.m3u8" | grep -c '^#EXTINF' || true)
    plain=$(curl -s "$base/plain/chunks_fmp4.m3u8" | grep -c '^#EXTINF' || true)
    ((ll >= 4 && plain >= 4)) && break
    sleep 0.2
done
((ll >= 4 && plain >= 4)) || die "no playlists: $(tail -3 "$dir/strom.log")"

page=http://127.0.0.1:$PAGE_PORT
echo "## LL-HLS latency and blocking reloads ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -r))"
echo
((LATENCY)) && echo "| player | stream | glass-to-glass p10 / p50 / p90 s | player's latency p50 s | samples | non-fatal errors |"
((LATENCY)) && echo "|---|---|---|---|---:|---:|"
((LATENCY)) && for run in "hls.js|HLS (fMP4, 2 s segments)|$page/index.html?src=$base/plain/playlist_fmp4.m3u8|hls" \
           "hls.js lowLatencyMode|LL-HLS (2 s segments, 0.5 s parts)|$page/index.html?src=$base/ll/playlist_fmp4.m3u8&lowLatency=1|hls" \
           "dash.js|DASH (2 s segments)|$page/dash.html?src=$base/plain/manifest.mpd|dash"; do
    IFS='|' read -r player stream url kind <<<"$run"
    json=$(taskset -c 1 node "$HERE/latency.mjs" "$url" "$kind" "$SETTLE" "$WINDOW")
    echo "$json" >>"$dir/latency.jsonl"
    echo "$json" >&2
    row=$(python3 -c 'import json, sys
r = json.loads(sys.argv[1])
print("{} / {} / {} | {} | {} | {}".format(r["glass_p10"], r["glass_p50"], r["glass_p90"], r["player_p50"], r["samples"], r["nonFatalErrors"]))' "$json")
    echo "| $player | $stream | $row |"
done
echo
json=$(taskset -c 1 python3 "$HERE/blocking_viewers.py" 127.0.0.1 "$HTTP_PORT" /live/ll/chunks_fmp4.m3u8 "$VIEWERS" 10 "$WINDOW" "$STROM_PID")
echo "blocking reloads, $VIEWERS viewers, ${WINDOW} s window: \`$json\`"
