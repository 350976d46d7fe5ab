#!/usr/bin/env bash
# Glass-to-glass latency per player and protocol (issue 32), measured the same way for
# every player: from the publisher's picture to the picture the player shows.
#
# Publisher: one ffmpeg (core 1, `-re`) draws testsrc2 320x240@30 with its frame index N
# burnt into the top 32 rows as a 16-bar barcode (barcode.py has the layout), encodes it
# once (x264 ultrafast zerolatency, a keyframe every GOP frames: 60 = 2 s by default; AAC)
# and sends it over RTMP (tee) to every stream below. The same filter graph also writes
# each frame's barcode band to `barcode.py clock`, which logs the wall-clock time frame N
# left the graph: its send time.
# Players decode and show in real time; for each frame they show we read the barcode of
# the picture (wall time t), and latency = t - send time of frame N. All on one machine,
# one clock. Per player/protocol: p50 and p95 over WINDOW s, starting SETTLE s after the
# first frame shown, freezes (one frame on screen > 0.5 s) and the frame rate achieved.
#   - hls.js, dash.js, Shaka Player in headless Chromium (browser.mjs): the <video> drawn
#     into a canvas on every requestVideoFrameCallback and every 250 ms, barcode read
#     with getImageData; the `waiting` events after playback began are counted.
#   - VLC: `cvlc --vout yuv` writes each frame (YUV4MPEG2) to a FIFO as its display time comes (the
#     vout's clock); run as nobody when root (VLC refuses root). Defaults otherwise
#     (network-caching 1000 ms), no audio output.
#   - GStreamer: playbin (video only) into `fdsink sync=true`, GRAY8 frames on stdout.
#   - ffmpeg: `ffmpeg -re -i URL -f rawvideo` on stdout: it paces decoded frames by their
#     timestamps from its start, an approximation of ffplay.
# strom (release build, pinned to core 0) runs four times, as part_target_ms is global:
# 500 ms parts (streams `plain`: HLS + DASH, `ll`: HLS + LLHLS), 200, 334 and 100 ms
# parts (`ll` only); all in SEGMENT s segments (2 by default). Browser runs are one after
# the other; VLC, GStreamer and ffmpeg play each protocol side by side.
# --transcode (issue 44): the 500 ms strom also transcodes `ll` into `ll_re` (320x240,
# 300 kbit/s, x264 ultrafast: the same picture size, so the barcode reads the same), and
# hls.js plays both in LL-HLS one after the other: the latency a rendition adds. As
# hls.js keeps whatever lag it starts with (catch-up off), that difference is within
# its start-to-start spread; so ffmpeg also reads both over RTMP side by side, unpaced
# (`-fflags nobuffer`, frames taken as they arrive): the transcode's own delay, which
# LL-HLS turns into at most one part more (a frame that misses its part goes in the next).
#
# --catchup (issue 47): hls.js also plays the 500 and 334 ms LL-HLS streams with its
# catch-up on (`maxLiveSyncPlaybackRate` 1.5, tests/browser/index.html `&catchup=1`).
# Shaka plays LL-HLS at 500, 334 and 200 ms parts.
#
#   bash bench/player_latency/run.sh [--no-build] [--settle 8] [--window 12] [--gop 60]
#                                    [--segment 2] [--only REGEX] [--keep DIR] [--transcode]
#                                    [--catchup]
# (--only: run the rows whose "player|protocol" matches REGEX; --keep: copy the logs and
# samples to DIR at the end.) Prints a Markdown table.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/bench/player_latency
STROM_BIN=${STROM_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/strom}
BUILD=1
SETTLE=8
WINDOW=12
GOP=60
SEGMENT=2
ONLY=.
KEEP=
TRANSCODE=0
CATCHUP=0
PAGE_PORT=18490

while (($#)); do
    case $1 in
        --no-build) BUILD=0 ;;
        --settle) SETTLE=$2; shift ;;
        --window) WINDOW=$2; shift ;;
        --gop) GOP=$2; shift ;;
        --segment) SEGMENT=$2; shift ;;
        --only) ONLY=$2; shift ;;
        --keep) KEEP=$2; shift ;;
        --transcode) TRANSCODE=1 ;;
        --catchup) CATCHUP=1 ;;
        -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
need cvlc vlc-bin
need gst-launch-1.0 gstreamer1.0-tools
modules=$ROOT/tests/browser/node_modules
[[ -e $modules/shaka-player/dist/shaka-player.compiled.js ]] || die "run npm ci --prefix tests/browser first"

if ((BUILD)); then
    (cd "$ROOT" && cargo build --release -p strom >&2)
fi
[[ -x $STROM_BIN ]] || die "$STROM_BIN missing (cargo build --release -p strom)"

dir=$(mktemp -d)
chmod 755 "$dir"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    [[ -n $KEEP ]] && mkdir -p "$KEEP" && cp -r "$dir"/*.log "$dir"/*.samples "$dir"/p500 "$KEEP"/ 2>/dev/null
    rm -rf "$dir"
}
trap cleanup EXIT

# shellcheck source=bench/strom.sh
source "$ROOT/bench/strom.sh"
# One strom per part target: name, part_target_ms, HTTP, management and RTMP ports.
SERVERS=("p500 500 18481 18482 19481" "p200 200 18483 18484 19482"
         "p334 334 18485 18486 19483" "p100 100 18487 18488 19484")
targets=()
for server in "${SERVERS[@]}"; do
    read -r name part http mgmt rtmp <<<"$server"
    mkdir "$dir/$name"
    ladder=
    if [[ $name == p500 ]]; then
        outputs='"outputs": ["HLS", "DASH"], "streams": [{"app": "live", "stream": "ll", "outputs": ["HLS", "LLHLS"]},
                                                        {"app": "live", "stream": "ll_re", "outputs": ["HLS", "LLHLS"]}]'
        ((TRANSCODE)) && ladder=', "Transcoding": {"ladders": [{"app": "live", "stream": "ll", "renditions": [
            {"name": "re", "width": 320, "height": 240, "video_bitrate": 300, "preset": "ultrafast"}]}]}'
        targets+=("[f=flv:onfail=ignore]rtmp://127.0.0.1:$rtmp/live/plain")
    else
        outputs='"outputs": ["HLS", "LLHLS"]'
    fi
    targets+=("[f=flv:onfail=ignore]rtmp://127.0.0.1:$rtmp/live/ll")
    cat >"$dir/$name/rules.conf" <<EOF
{"RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": $rtmp}]},
 "Delivery": {$outputs, "segment_duration_secs": $SEGMENT, "part_target_ms": $part}$ladder}
EOF
    strom_start "$dir/$name" "$http" "$mgmt" 0 || die "strom $name did not start"
    PIDS+=("$STROM_PID")
done

# The publisher. Bars: bit i of N (most significant first) over x in [i, i+1) * W/16.
bit='bitand(floor(N/pow(2,15-floor(X*16/W))),1)'
graph="color=c=black:s=320x32:r=30,format=gray,geq=lum='if(lt(Y,16),if($bit,235,16),if($bit,16,235))'[band];"
graph+="testsrc2=size=320x240:rate=30,format=yuv420p[bg];[bg][band]overlay=0:0:format=yuv420,split=2[out0][out1]"
tee=$(IFS='|'; echo "${targets[*]}")
(taskset -c 1 ffmpeg -hide_banner -loglevel error -re -f lavfi -i "$graph" \
    -re -f lavfi -i sine=frequency=440:sample_rate=48000 \
    -map 0:0 -map 1:0 -c:v libx264 -preset ultrafast -tune zerolatency -g "$GOP" -keyint_min "$GOP" \
    -sc_threshold 0 -pix_fmt yuv420p -b:v 500k -c:a aac -b:a 64k -flags +global_header -f tee "$tee" \
    -map 0:1 -vf crop=320:32:0:0,format=gray -f rawvideo -flush_packets 1 pipe:1 </dev/null 2>"$dir/publisher.log" |
    python3 "$HERE/barcode.py" clock 320 "$dir/send.log") &
PIDS+=("$!")

base=http://127.0.0.1:18481/live
for _ in $(seq 150); do
    n=$(curl -s "$base/plain/chunks_fmp4.m3u8" | grep -c '^#EXTINF' || true)
    ((n >= 3)) && break
    sleep 0.2
done
((n >= 3)) || die "no playlist: $(tail -3 "$dir/publisher.log" "$dir/p500/strom.log")"

mkdir "$dir/pages"
ln -s "$ROOT/tests/browser/index.html" "$ROOT/tests/browser/dash.html" "$ROOT/tests/browser/shaka.html" \
    "$modules/hls.js/dist/hls.min.js" "$modules/dashjs/dist/modern/umd/dash.all.min.js" \
    "$modules/shaka-player/dist/shaka-player.compiled.js" "$modules/mux.js/dist/mux.min.js" "$dir/pages/"
(cd "$dir/pages" && exec taskset -c 1 python3 -m http.server "$PAGE_PORT" --bind 127.0.0.1 >/dev/null 2>&1) &
PIDS+=("$!")
page=http://127.0.0.1:$PAGE_PORT

# Protocols: name and URL.
declare -A URL=(
    [hls_ts]=$base/plain/playlist.m3u8
    [hls_fmp4]=$base/plain/playlist_fmp4.m3u8
    [dash]=$base/plain/manifest.mpd
    [ll500]=$base/ll/playlist_fmp4.m3u8
    [ll500_re]=$base/ll_re/playlist_fmp4.m3u8
    [rtmp]=rtmp://127.0.0.1:19481/live/ll
    [rtmp_re]=rtmp://127.0.0.1:19481/live/ll_re
    [ll200]=http://127.0.0.1:18483/live/ll/playlist_fmp4.m3u8
    [ll334]=http://127.0.0.1:18485/live/ll/playlist_fmp4.m3u8
    [ll100]=http://127.0.0.1:18487/live/ll/playlist_fmp4.m3u8
)
declare -A LABEL=(
    [hls_ts]="HLS (TS)" [hls_fmp4]="HLS (fMP4)" [dash]="DASH"
    [ll500]="LL-HLS, 500 ms parts" [ll200]="LL-HLS, 200 ms parts"
    [ll500_re]="LL-HLS, 500 ms parts, transcoded rendition"
    [rtmp]="RTMP, unpaced" [rtmp_re]="RTMP, unpaced, transcoded rendition"
    [ll334]="LL-HLS, 334 ms parts" [ll100]="LL-HLS, 100 ms parts"
)

echo "## Player latency ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg))"
echo
echo "| player | protocol | latency p50 s | p95 s | samples | freezes > 0.5 s | fps | notes |"
echo "|---|---|---:|---:|---:|---:|---:|---|"

row() { # player protocol samples-file notes
    local stats
    stats=$(python3 "$HERE/barcode.py" stats "$dir/send.log" "$3" "$SETTLE" "$WINDOW")
    echo "$1 $2 $stats $4" >&2
    python3 -c 'import json, sys
r = json.loads(sys.argv[3])
print("| {} | {} | {} | {} | {} | {} | {} | {} |".format(sys.argv[1], sys.argv[2], r["latency_p50"], r["latency_p95"],
      r["samples"], r.get("freezes"), r.get("fps"), sys.argv[4]))' "$1" "${LABEL[$2]}" "$stats" "$4"
}

browser() { # player page protocol query
    local out=$dir/$1_$3.samples json notes
    [[ "$1|$3" =~ $ONLY ]] || return 0
    json=$(taskset -c 1 node "$HERE/browser.mjs" "$page/$2?src=${URL[$3]}$4" $((SETTLE + WINDOW)) "$out" 2>"$dir/node_$3.log" | tail -1) || true
    notes=$(python3 -c 'import json, sys
try:
    r = json.loads(sys.argv[1])
except ValueError:
    print("failed, see node_*.log"); sys.exit()
parts = "" if r.get("partsLoaded") is None else ", {} parts loaded".format(r["partsLoaded"])
if r.get("hlsLatency") is not None:
    parts += ", hls.latency {} s".format(r["hlsLatency"])
if r.get("errorKinds"):
    parts += " ({})".format(", ".join(map(str, r["errorKinds"])))
print("{} waiting, {} non-fatal / {} fatal errors{}".format(r["waiting"], r["nonFatalErrors"], r["fatalErrors"], parts))' "$json")
    row "$1" "$3" "$out" "$notes"
}

browser hls.js index.html hls_ts ""
browser hls.js index.html hls_fmp4 ""
browser "hls.js lowLatencyMode" index.html ll500 "&lowLatency=1"
if ((TRANSCODE)); then
    browser "hls.js lowLatencyMode" index.html ll500_re "&lowLatency=1"
fi
browser "hls.js lowLatencyMode" index.html ll334 "&lowLatency=1"
if ((CATCHUP)); then
    browser "hls.js lowLatencyMode catch-up" index.html ll500 "&lowLatency=1&catchup=1"
    browser "hls.js lowLatencyMode catch-up" index.html ll334 "&lowLatency=1&catchup=1"
fi
browser "hls.js lowLatencyMode" index.html ll200 "&lowLatency=1"
browser "hls.js lowLatencyMode" index.html ll100 "&lowLatency=1"
browser dash.js dash.html dash ""
browser Shaka shaka.html hls_ts ""
browser Shaka shaka.html hls_fmp4 ""
browser "Shaka lowLatencyMode" shaka.html ll500 "&lowLatency=1"
browser "Shaka lowLatencyMode" shaka.html ll334 "&lowLatency=1"
browser "Shaka lowLatencyMode" shaka.html ll200 "&lowLatency=1"
browser Shaka shaka.html dash ""

# The source and its rendition read side by side over RTMP, each frame timed as it
# arrives.
if ((TRANSCODE)); then
    files=()
    group=()
    for proto in rtmp rtmp_re; do
        [[ "ffmpeg|$proto" =~ $ONLY ]] || continue
        taskset -c 1 ffmpeg -hide_banner -loglevel error -fflags nobuffer -flags low_delay \
            -i "${URL[$proto]}" -an -f rawvideo -pix_fmt gray pipe:1 </dev/null 2>"$dir/ffmpeg_$proto.log" |
            taskset -c 1 python3 "$HERE/barcode.py" read 320 240 0 "$dir/ffmpeg_$proto.samples" &
        group+=("$!")
        files+=("$dir/ffmpeg_$proto.samples")
    done
    if ((${#files[@]})); then
        python3 "$HERE/barcode.py" wait "$SETTLE" "$WINDOW" $((SETTLE + WINDOW + 25)) "${files[@]}"
        for pid in "${group[@]}"; do kill "$pid" 2>/dev/null || true; done
        for proto in rtmp rtmp_re; do
            if [[ "ffmpeg|$proto" =~ $ONLY ]]; then row ffmpeg "$proto" "$dir/ffmpeg_$proto.samples" ""; fi
        done
    fi
fi

# VLC, GStreamer and ffmpeg side by side, one protocol at a time.
home=$dir/vlc-home
mkdir -m 777 "$home"
vlc=(cvlc)
[[ $(id -u) == 0 ]] && vlc=(setpriv --reuid=65534 --regid=65534 --clear-groups cvlc)
for proto in hls_ts hls_fmp4 ll500 dash; do
    url=${URL[$proto]}
    files=()
    group=()
    if [[ "VLC|$proto" =~ $ONLY ]]; then
        rm -f "$home/fifo" && mkfifo -m 666 "$home/fifo"
        taskset -c 1 python3 "$HERE/barcode.py" read 0 0 -1 "$dir/vlc_$proto.samples" <"$home/fifo" &
        group+=("$!")
        HOME=$home taskset -c 1 "${vlc[@]}" --intf dummy --no-interact --no-audio --vout yuv \
            --yuv-file "$home/fifo" --yuv-yuv4mpeg2 "$url" >"$dir/vlc_$proto.log" 2>&1 &
        group+=("$!")
        files+=("$dir/vlc_$proto.samples")
    fi
    if [[ "GStreamer|$proto" =~ $ONLY ]]; then
        taskset -c 1 gst-launch-1.0 -q playbin uri="$url" flags=0x1 \
            video-sink="videoconvert ! video/x-raw,format=GRAY8 ! fdsink fd=1 sync=true" 2>"$dir/gst_$proto.log" |
            taskset -c 1 python3 "$HERE/barcode.py" read 320 240 0 "$dir/gst_$proto.samples" &
        group+=("$!")
        files+=("$dir/gst_$proto.samples")
    fi
    if [[ "ffmpeg|$proto" =~ $ONLY ]]; then
        taskset -c 1 ffmpeg -hide_banner -loglevel error -re -i "$url" -an -f rawvideo -pix_fmt gray pipe:1 \
            </dev/null 2>"$dir/ffmpeg_$proto.log" |
            taskset -c 1 python3 "$HERE/barcode.py" read 320 240 0 "$dir/ffmpeg_$proto.samples" &
        group+=("$!")
        files+=("$dir/ffmpeg_$proto.samples")
    fi
    ((${#files[@]})) || continue
    python3 "$HERE/barcode.py" wait "$SETTLE" "$WINDOW" $((SETTLE + WINDOW + 25)) "${files[@]}"
    for pid in "${group[@]}"; do kill "$pid" 2>/dev/null || true; done
    for player in VLC GStreamer ffmpeg; do
        short=${player,,}
        short=${short/gstreamer/gst}
        # Notes: the player's first error line, if any.
        note=$(grep -m1 -E '^ERROR|error:|Error' "$dir/${short}_$proto.log" 2>/dev/null | grep -v -E 'ALSA|audio output|dbus|interface|video converter|chain filter|Broken pipe' | cut -c1-90 || true)
        if [[ "$player|$proto" =~ $ONLY ]]; then row "$player" "$proto" "$dir/${short}_$proto.samples" "${note//|/ }"; fi
    done
done
exit 0
