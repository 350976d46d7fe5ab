#!/usr/bin/env bash
# WebRTC playback against hls.js LL-HLS of the same stream, side by side in one run (issue
# 35): time to first frame and glass-to-glass delay on loopback, strom's WHEP beside
# Janus (Debian's janus 1.1, streaming plugin: the only WebRTC server packaged here; it
# has no WHEP, so its page speaks the Janus REST API) as the peer.
#
# strom (release build) runs pinned to core 0 with RTMP in, HLS + LLHLS out (2 s
# segments, 500 ms parts) and WebRTC on one UDP port (ICE-TCP off); Janus, also on core 0,
# has one RTP mountpoint per keyframe interval (H.264 passed through, Opus). For each
# keyframe interval in --gops (frames at 30 fps; 30 and 60 = 1 s and 2 s by default) one
# ffmpeg (core 1, `-re`) draws testsrc2 320x240@30 with its frame index N burnt into the
# top 32 rows as a barcode (bench/player_latency/barcode.py's layout and `clock`, which
# logs when each frame left the filter graph: its send time) and encodes it once (x264
# ultrafast zerolatency, no B-frames, the keyframe interval fixed, no scene cuts): over
# RTMP to strom's live/g<GOP> with AAC 64 kbit/s, and the same H.264 over RTP (parameter
# sets in front of every keyframe) to Janus with the tone in Opus. Then, on core 1 in
# headless Chromium (browser.mjs):
#   1. latency: one strom WHEP session (whep.html: recvonly video and audio), one Janus
#      session (janus.html) and one hls.js lowLatencyMode session (tests/browser/index.html)
#      at the same time, each for SETTLE + WINDOW s after its first frame: glass-to-glass
#      p50/p95 (frame shown - frame sent, barcode read from every presented frame),
#      freezes (one picture > 0.5 s), fps, over WINDOW s from SETTLE s after the first
#      frame; for WebRTC also the part before the browser (the frame's packets arrived -
#      frame sent, requestVideoFrameCallback's receiveTime), Chrome's jitter-buffer and
#      decode times, packets lost and the audio received;
#   2. time to first frame: --joins fresh joins of each player, one after the other with a
#      random pause of up to one keyframe interval between them, each held --hold s after
#      its first frame (WebRTC: from the page's play() call to the first frame presented;
#      hls.js: from the navigation start).
# Prints two Markdown tables (report.py): per player and keyframe interval, and per join.
# The bench runs at nice -10 when root (--nice N; 0 skips), ahead of other work.
# --no-janus leaves Janus out (then the janus package is not needed).
#
#   bash bench/webrtc_latency/run.sh [--no-build] [--settle 5] [--window 15] [--gops 30,60]
#                                    [--joins 5] [--hold 3] [--nice -10] [--no-janus] [--keep DIR]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
HERE=$ROOT/bench/webrtc_latency
BARCODE=$ROOT/bench/player_latency/barcode.py
STROM_BIN=${STROM_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/strom}
BUILD=1
NICE=$( (($(id -u) == 0)) && echo -10 || true)
SETTLE=5
WINDOW=15
GOPS=30,60
JOINS=5
HOLD=3
KEEP=
HTTP_PORT=18581
MGMT_PORT=18582
RTMP_PORT=19581
ICE_PORT=18589
PAGE_PORT=18590
JANUS=1
JANUS_HTTP_PORT=18591
JANUS_RTP_PORT=18600 # mountpoint i (0, 1, ...) of --gops: video on +2i, audio on +2i+1

while (($#)); do
    case $1 in
        --no-build) BUILD=0 ;;
        --settle) SETTLE=$2; shift ;;
        --window) WINDOW=$2; shift ;;
        --gops) GOPS=$2; shift ;;
        --joins) JOINS=$2; shift ;;
        --hold) HOLD=$2; shift ;;
        --nice) NICE=$2; shift ;;
        --no-janus) JANUS=0 ;;
        --keep) KEEP=$2; shift ;;
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
need taskset util-linux
((JANUS == 0)) || { need janus janus; need ip iproute2; }
(($(nproc) >= 2)) || die "needs 2 cores (strom on core 0, publisher and browsers on core 1)"
modules=$ROOT/tests/browser/node_modules
[[ -e $modules/hls.js/dist/hls.min.js && -e $modules/playwright-core/package.json ]] ||
    die "hls.js or playwright-core missing: run npm ci --prefix tests/browser first"
encoders=$(ffmpeg -hide_banner -encoders 2>/dev/null)
[[ $encoders == *libx264* && $encoders == *libopus* ]] || die "ffmpeg lacks libx264 or libopus (Debian's ffmpeg has both)"

if ((BUILD)); then
    (cd "$ROOT" && cargo build --release -p strom >&2)
fi
[[ -x $STROM_BIN ]] || die "$STROM_BIN missing (cargo build --release -p strom)"

# Every process of the bench (strom, the publisher, the players) inherits this script's
# priority: on a machine shared with other work, nice -10 keeps their CPU share (and so
# the queueing they see) from depending on what else runs; CPU times are not changed.
if [[ -n $NICE && $NICE != 0 ]]; then renice -n "$NICE" -p $$ >/dev/null || die "renice -n $NICE failed (needs root; --nice 0 to skip)"; fi
dir=$(mktemp -d /tmp/webrtc-latency.XXXXXX)
PIDS=()
PUB=
cleanup() {
    for pid in $PUB; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if [[ -n $KEEP ]]; then mkdir -p "$KEEP" && cp -r "$dir"/. "$KEEP"/ && echo "logs and samples in $KEEP" >&2; fi
    rm -rf "$dir"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { echo "[$(date +%T)] $*" >&2; }

# shellcheck source=bench/strom.sh
source "$ROOT/bench/strom.sh"
cat >"$dir/rules.conf" <<EOF
{"RtmpSettings": {"interfaces": [{"ip": "127.0.0.1", "port": $RTMP_PORT}]},
 "Delivery": {"outputs": ["HLS", "LLHLS"], "segment_duration_secs": 2, "part_target_ms": 500},
 "WebRtcSettings": {"interfaces": [{"ip": "127.0.0.1", "port": $ICE_PORT}], "tcp": false}}
EOF
strom_start "$dir" "$HTTP_PORT" "$MGMT_PORT" 0 || die "strom did not start"
PIDS+=("$STROM_PID")

PLAYERS=(whep hls)
if ((JANUS)); then
    PLAYERS=(whep janus hls)
    mounts=()
    i=0
    for gop in ${GOPS//,/ }; do
        mounts+=("$gop:$((JANUS_RTP_PORT + 2 * i)):$((JANUS_RTP_PORT + 2 * i + 1))")
        i=$((i + 1))
    done
    # shellcheck source=bench/janus.sh
    source "$ROOT/bench/janus.sh"
    janus_start "$dir" "$JANUS_HTTP_PORT" 0 "${mounts[@]}" || die "janus did not start"
    PIDS+=("$JANUS_PID")
fi

mkdir "$dir/pages"
ln -s "$HERE/whep.html" "$HERE/janus.html" "$HERE/receiver.js" "$ROOT/tests/browser/index.html" \
    "$modules/hls.js/dist/hls.min.js" "$dir/pages/"
(cd "$dir/pages" && exec taskset -c 1 python3 -m http.server "$PAGE_PORT" --bind 127.0.0.1 >/dev/null 2>&1) &
PIDS+=("$!")
page=http://127.0.0.1:$PAGE_PORT
base=http://127.0.0.1:$HTTP_PORT/live
for _ in $(seq 50); do curl -sf -o /dev/null "$page/whep.html" && break; sleep 0.1; done
curl -sf -o /dev/null "$page/whep.html" || die "the page server did not start"

# The publisher. Bars: bit i of N (most significant first) over x in [i, i+1) * W/16.
bit='bitand(floor(N/pow(2,15-floor(X*16/W))),1)'
graph="color=c=black:s=320x32:r=30,format=gray,geq=lum='if(lt(Y,16),if($bit,235,16),if($bit,16,235))'[band];"
graph+="testsrc2=size=320x240:rate=30,format=yuv420p[bg];[bg][band]overlay=0:0:format=yuv420,split=2[out0][out1]"
publish() { # publish GOP INDEX: starts the publisher of live/g<GOP> and its clock, sets PUB
    local gop=$1 band=$dir/band_$1 out janus_video janus_audio
    local -a opus=()
    mkfifo "$band"
    taskset -c 1 python3 "$BARCODE" clock 320 "$dir/send_$gop.log" <"$band" &
    PUB="$!"
    out="[f=flv:onfail=ignore]rtmp://127.0.0.1:$RTMP_PORT/live/g$gop"
    if ((JANUS)); then
        janus_video=$((JANUS_RTP_PORT + 2 * $2)) janus_audio=$((JANUS_RTP_PORT + 2 * $2 + 1))
        out+="|[f=rtp:select=v:onfail=ignore:bsfs/v=dump_extra]rtp://127.0.0.1:$janus_video?pkt_size=1200"
        opus=(-map 1:0 -c:a libopus -b:a 64k -f rtp "rtp://127.0.0.1:$janus_audio?pkt_size=1200")
    fi
    taskset -c 1 ffmpeg -hide_banner -loglevel error -re -f lavfi -i "$graph" \
        -re -f lavfi -i sine=frequency=440:sample_rate=48000 \
        -map 0:0 -map 1:0 -c:v libx264 -preset ultrafast -tune zerolatency -bf 0 -g "$gop" -keyint_min "$gop" \
        -sc_threshold 0 -pix_fmt yuv420p -b:v 500k -c:a aac -b:a 64k -flags +global_header -f tee "$out" \
        "${opus[@]}" \
        -map 0:1 -vf crop=320:32:0:0,format=gray -f rawvideo -flush_packets 1 pipe:1 </dev/null >"$band" 2>"$dir/publisher_$gop.log" &
    PUB="$! $PUB"
}
unpublish() {
    for pid in $PUB; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done
    PUB=
}

echo "## WebRTC latency ($(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg))"
echo
declare -A PAGE=([whep]=whep.html [janus]=janus.html) LABEL=([whep]="strom WHEP" [janus]=Janus [hls]=hls.js)
i=0
for gop in ${GOPS//,/ }; do
    log "keyframe every $gop frames: publishing live/g$gop"
    publish "$gop" "$i"
    i=$((i + 1))
    # Ready when the LL-HLS playlist lists 3 segments (hls.js starts at its live edge then).
    n=0
    for _ in $(seq 200); do
        n=$(curl -s "$base/g$gop/chunks_fmp4.m3u8" | grep -c '^#EXTINF' || true)
        ((n >= 3)) && break
        kill -0 "${PUB%% *}" 2>/dev/null || break
        sleep 0.2
    done
    ((n >= 3)) || die "no LL-HLS playlist for live/g$gop: $(tail -n 3 "$dir/publisher_$gop.log" "$dir/strom.log")"
    declare -A URL=([whep]=$base/g$gop/whep.stream [janus]="http://127.0.0.1:$JANUS_HTTP_PORT/janus#$gop" [hls]=-)
    PAGE[hls]="index.html?src=$base/g$gop/playlist_fmp4.m3u8&lowLatency=1"
    log "latency: ${PLAYERS[*]} side by side for $((SETTLE + WINDOW)) s"
    pids=()
    for player in "${PLAYERS[@]}"; do
        taskset -c 1 node "$HERE/browser.mjs" "$player" "$page/${PAGE[$player]}" "${URL[$player]}" 1 \
            $((SETTLE + WINDOW)) 0 "$dir/lat_${player}_$gop" >"$dir/lat_${player}_$gop.jsonl" 2>"$dir/node_lat_${player}_$gop.log" &
        pids+=("$!")
    done
    for j in "${!PLAYERS[@]}"; do
        wait "${pids[$j]}" || log "${LABEL[${PLAYERS[$j]}]} latency run failed: $(tail -2 "$dir/node_lat_${PLAYERS[$j]}_$gop.log")"
    done
    gap=$(awk -v g="$gop" 'BEGIN { print g / 30 }')
    for player in "${PLAYERS[@]}"; do
        log "time to first frame: $JOINS ${LABEL[$player]} joins"
        taskset -c 1 node "$HERE/browser.mjs" "$player" "$page/${PAGE[$player]}" "${URL[$player]}" "$JOINS" "$HOLD" "$gap" \
            "$dir/join_${player}_$gop" >"$dir/join_${player}_$gop.jsonl" 2>"$dir/node_join_${player}_$gop.log" ||
            log "${LABEL[$player]} joins failed: $(tail -2 "$dir/node_join_${player}_$gop.log")"
    done
    unpublish
done
python3 "$HERE/report.py" "$dir" "$SETTLE" "$WINDOW" "${PLAYERS[*]}" ${GOPS//,/ }
grep -E ' (WARN|ERROR) ' "$dir/strom.log" | tail -5 | sed 's/^/strom: /' >&2 || true
