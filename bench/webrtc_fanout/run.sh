#!/usr/bin/env bash
# WebRTC fan-out against RTMP fan-out, side by side in one run (issue 35): strom's CPU per
# viewer-second and viewers per core over WebRTC (WHEP) and over RTMP, with Janus (Debian's
# janus 1.1, streaming plugin: the only WebRTC server packaged here) as the WebRTC peer;
# same publisher, same run.
#
# One strom (release build) is pinned to core 0 (its supervisor and every worker inherit
# the pinning) with RTMP in and out, WebRTC on one UDP port (ICE-TCP off) and no HLS/DASH
# packaging (`"outputs": []`: nothing but the viewers costs per-viewer work); Janus, also
# pinned to core 0, has one RTP mountpoint (bench/janus.sh: one static event loop, ICE on
# loopback). One ffmpeg publisher (core 1) encodes testsrc2 640x360@30 once, x264
# ultrafast zerolatency 550 kbps (2 s keyframe interval), and sends it over RTMP to
# strom's live/bench with a sine in AAC 48 kbps (the stream rtmp_fanout measures) and
# over RTP to Janus with the sine in Opus 48 kbps. Viewers are added in steps, first
# strom's WebRTC viewers and Janus's (`webrtc-fanout`, bench/webrtc_fanout: str0m
# viewers, each a full ICE agent with its own UDP socket, decrypting and depacketizing
# everything and sending RTCP back; over WHEP to strom, over the Janus REST API to
# Janus), then RTMP players (`rtmp-fanout`, bench/rtmp_fanout), every generator on core 1.
# Each step is a fresh generator run (ramp <= --ramp-secs, --warmup-secs, --measure-secs)
# that samples the measured server's process tree plus ksoftirqd/0 (utime+stime) at both
# ends of the window. A step passes when every viewer connected and received >= 95% of the
# expected bytes (and, over WebRTC, of the expected video frames; calibrated by the first
# step's median viewer) and the server stayed under --cpu-limit % of one core. A
# protocol's steps stop at the first that does not pass, or where the generator's core
# saturated (then the step says nothing more about the server). Before each step the
# script waits (up to --quiet-wait s) for both cores to be free of other load and repeats
# a disturbed step (--retries).
#
# Per protocol: "viewers per core" is the largest passing step divided by the server's CPU
# fraction there (extrapolated to one full core), "marginal CPU" the CPU added per viewer
# between the two largest passing steps (the publisher's constant cost left out), and the
# ratio RTMP / WebRTC of viewers per core (issue 35's goal: WebRTC within 2x of RTMP, a
# ratio <= 2), and Janus / strom over WebRTC. The WebRTC tables also have the time to first
# frame under load (first signaling request to the first whole video frame at the
# generator), the datagrams per viewer-second, the RSS above the server's before its first
# step per viewer, and the datagrams the kernel dropped in the window for a full receive
# buffer or no send room (machine-wide counters). The bench runs at nice -10 when root
# (--nice). Traffic goes to 127.0.0.1 only; results go to stdout (Markdown), each step's
# row to stderr as it is measured. --no-janus leaves Janus out.
#
#   bash bench/webrtc_fanout/run.sh [--webrtc-steps 50,100,...] [--janus-steps ...]
#                                   [--rtmp-steps 800,...] [--measure-secs N] [--no-build]
#                                   [--keep] [--no-audio] [--no-janus] [--loss PCT]
#
# --loss PCT: every WebRTC viewer (strom's and Janus's) drops PCT% of the datagrams it
# receives, at random, before its WebRTC stack sees them (NACK and retransmission repair
# it); the step tables then say what loss costs the server.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
WEBRTC_STEPS=50,100,150,200,250,300,400
JANUS_STEPS=50,100,200,300,400,600
RTMP_STEPS=800,1600,3200,4800
MEASURE=10
WARMUP=4
WEBRTC_RAMP=100 # viewers/s, raised so that a step's ramp takes at most RAMP_SECS
RTMP_RAMP=200
RAMP_SECS=8
CPU_LIMIT=90
GEN_LIMIT=90
HTTP_PORT=18681
MGMT_PORT=18682
RTMP_PORT=19681
ICE_PORT=18689
JANUS=1
JANUS_HTTP_PORT=18691
JANUS_VIDEO_PORT=18692 # and the audio on the port after it
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
STROM_BIN=$TARGET_DIR/release/strom
WEBRTC_GEN=$TARGET_DIR/release/webrtc-fanout
RTMP_GEN=$TARGET_DIR/release/rtmp-fanout
BUILD=1
NICE=$( (($(id -u) == 0)) && echo -10 || true)
KEEP=0
AUDIO=1
LOSS=0
QUIET_WAIT=30
RETRIES=1

usage() { awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; cat <<EOF
options: --webrtc-steps LIST ($WEBRTC_STEPS)  --janus-steps LIST ($JANUS_STEPS)  --rtmp-steps LIST ($RTMP_STEPS)
         --measure-secs N ($MEASURE)  --no-janus
         --warmup-secs N ($WARMUP)  --ramp-secs N ($RAMP_SECS)  --cpu-limit PCT ($CPU_LIMIT)  --gen-limit PCT ($GEN_LIMIT)
         --quiet-wait SECS ($QUIET_WAIT)  --retries N ($RETRIES)  --no-audio (WebRTC viewers offer video only)  --loss PCT ($LOSS)
         --nice N (the bench's priority; default -10 as root, 0 skips)  --no-build  --keep (keep the temp dir with logs and JSON)
EOF
}

while (($#)); do
    case $1 in
        --webrtc-steps) WEBRTC_STEPS=$2; shift ;;
        --janus-steps) JANUS_STEPS=$2; shift ;;
        --rtmp-steps) RTMP_STEPS=$2; shift ;;
        --no-janus) JANUS=0 ;;
        --measure-secs) MEASURE=$2; shift ;;
        --warmup-secs) WARMUP=$2; shift ;;
        --ramp-secs) RAMP_SECS=$2; shift ;;
        --cpu-limit) CPU_LIMIT=$2; shift ;;
        --gen-limit) GEN_LIMIT=$2; shift ;;
        --quiet-wait) QUIET_WAIT=$2; shift ;;
        --retries) RETRIES=$2; shift ;;
        --no-audio) AUDIO=0 ;;
        --loss) LOSS=$2; shift ;;
        --no-build) BUILD=0 ;;
        --nice) NICE=$2; shift ;;
        --keep) KEEP=1 ;;
        -h|--help) usage; exit 0 ;;
        *) echo "unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done

die() { echo "run.sh: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || die "$1 not found: install the Debian package $2"; }
need ffmpeg ffmpeg
need taskset util-linux
need curl curl
((JANUS == 0)) || { need janus janus; need ip iproute2; }
(($(nproc) >= 2)) || die "needs 2 cores (server on core 0, publisher and viewers on core 1)"
encoders=$(ffmpeg -hide_banner -encoders 2>/dev/null)
[[ $encoders == *libx264* && $encoders == *libopus* ]] || die "ffmpeg lacks libx264 or libopus (Debian's ffmpeg has both)"

if ((BUILD)); then
    (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR cargo build --release -p strom \
        -p strom-bench-rtmp-fanout -p strom-bench-webrtc-fanout) >&2
fi
for bin in "$STROM_BIN" "$WEBRTC_GEN" "$RTMP_GEN"; do
    [[ -x $bin ]] || die "$bin missing (cargo build --release -p strom -p strom-bench-rtmp-fanout -p strom-bench-webrtc-fanout)"
done

# Every process of the bench (strom, the publisher, the players) inherits this script's
# priority: on a machine shared with other work, nice -10 keeps their CPU share (and so
# the queueing they see) from depending on what else runs; CPU times are not changed.
if [[ -n $NICE && $NICE != 0 ]]; then renice -n "$NICE" -p $$ >/dev/null || die "renice -n $NICE failed (needs root; --nice 0 to skip)"; fi
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
TMP=$(mktemp -d /tmp/webrtc-fanout.XXXXXX)
PUB_PID="" STROM_PID="" JANUS_PID=""
cleanup() { # ends only this script's own processes (strom, Janus, the publisher)
    for pid in $PUB_PID $STROM_PID $JANUS_PID; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if ((KEEP)); then echo "logs and JSON kept in $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# jget FILE KEY: a number (or null) from a generator's flat JSON.
jget() { grep -o "\"$2\":[^,}]*" "$1" | head -1 | cut -d: -f2; }
log() { echo "[$(date +%T)] $*" >&2; }

# shellcheck source=bench/strom.sh
source "$ROOT/bench/strom.sh"
cat >"$TMP/rules.conf" <<EOF
{
  "RtmpSettings": {
    "interfaces": [{ "ip": "127.0.0.1", "port": $RTMP_PORT }],
    "limits": { "max_connections": 19000, "max_players": 19000, "max_connections_per_ip": 19000 }
  },
  "WebRtcSettings": {
    "interfaces": [{ "ip": "127.0.0.1", "port": $ICE_PORT }],
    "tcp": false,
    "limits": { "max_sessions": 19000, "max_sessions_per_ip": 19000 }
  },
  "Delivery": { "outputs": [] }
}
EOF
strom_start "$TMP" "$HTTP_PORT" "$MGMT_PORT" 0 || die "strom did not start"
PROTOS=(webrtc rtmp)
declare -A SERVER=([webrtc]=$STROM_PID [rtmp]=$STROM_PID)
declare -A STEPS=([webrtc]=$WEBRTC_STEPS [janus]=$JANUS_STEPS [rtmp]=$RTMP_STEPS)
tee_out="[f=flv:onfail=ignore]rtmp://127.0.0.1:$RTMP_PORT/live/bench"
opus=()
if ((JANUS)); then
    # shellcheck source=bench/janus.sh
    source "$ROOT/bench/janus.sh"
    janus_start "$TMP" "$JANUS_HTTP_PORT" 0 "1:$JANUS_VIDEO_PORT:$((JANUS_VIDEO_PORT + 1))" || die "janus did not start"
    PROTOS=(webrtc janus rtmp)
    SERVER[janus]=$JANUS_PID
    tee_out+="|[f=rtp:select=v:onfail=ignore:bsfs/v=dump_extra]rtp://127.0.0.1:$JANUS_VIDEO_PORT?pkt_size=1200"
    opus=(-map 1:0 -c:a libopus -b:a 48k -f rtp "rtp://127.0.0.1:$((JANUS_VIDEO_PORT + 1))?pkt_size=1200")
fi

PUB_LOG=$TMP/ffmpeg.log
PUB_START_MS=$(date +%s%3N)
taskset -c 1 ffmpeg -nostdin -loglevel warning -re \
    -f lavfi -i testsrc2=size=640x360:rate=30 -f lavfi -i sine \
    -map 0:0 -map 1:0 -c:v libx264 -preset ultrafast -tune zerolatency -b:v 550k -maxrate 550k -bufsize 1100k -g 60 \
    -c:a aac -b:a 48k -flags +global_header -f tee "$tee_out" "${opus[@]}" >"$PUB_LOG" 2>&1 &
PUB_PID=$!
# Ready when the server lists the stream as published.
for _ in $(seq 100); do
    curl -s "http://127.0.0.1:$MGMT_PORT/manage/live_streams_status" 2>/dev/null | grep -q '"bench"' && break
    kill -0 "$PUB_PID" 2>/dev/null || die "publisher exited: $(tail -2 "$PUB_LOG")"
    sleep 0.1
done
curl -s "http://127.0.0.1:$MGMT_PORT/manage/live_streams_status" | grep -q '"bench"' ||
    die "live/bench not published: $(tail -2 "$PUB_LOG") $(tail -2 "$TMP/strom.log")"

busy() { # busy SECS: "core0 core1" busy % over SECS
    local a b
    a=$(grep -E '^cpu[01] ' /proc/stat); sleep "$1"; b=$(grep -E '^cpu[01] ' /proc/stat)
    paste <(echo "$a") <(echo "$b") | awk '{ b1 = $2+$3+$4+$7+$8+$9; t1 = b1+$5+$6
        b2 = $13+$14+$15+$18+$19+$20; t2 = b2+$16+$17; printf "%.0f ", (b2-b1)*100/(t2-t1) } END { print "" }'
}

wait_quiet() { # until core 0 < 15% and core 1 < 40% busy (publisher included), or QUIET_WAIT
    local t=0 c0 c1
    while :; do
        read -r c0 c1 < <(busy 2)
        ((c0 < 15 && c1 < 40)) && return 0
        ((t == 0)) && log "cores busy (core 0 ${c0}%, core 1 ${c1}%): waiting up to ${QUIET_WAIT}s"
        ((t += 2, t >= QUIET_WAIT)) && { log "still busy; measuring anyway"; return 0; }
    done
}

# measure PROTO STEP: one generator run; sets RES (ok..., FAIL..., inconclusive...), NOISY
# (non-empty when other load disturbed the cores), ROW (a Markdown row) and PASS_* figures.
measure() {
    local proto=$1 step=$2 out=$TMP/$1-$2.json rate conn full cpu gen kbps core0 core1 errs extra rss
    local -a gen_cmd
    if [[ $proto != rtmp ]]; then
        rate=$(awk -v n="$step" -v r="$WEBRTC_RAMP" -v s="$RAMP_SECS" 'BEGIN { print (n / s > r) ? n / s : r }')
        if [[ $proto == janus ]]; then
            gen_cmd=("$WEBRTC_GEN" --url "http://127.0.0.1:$JANUS_HTTP_PORT/janus" --janus-mountpoint 1
                --local-ip "$JANUS_IP" --viewers "$step")
        else
            gen_cmd=("$WEBRTC_GEN" --url "http://127.0.0.1:$HTTP_PORT/live/bench/whep.stream" --viewers "$step")
            ((AUDIO)) || gen_cmd+=(--no-audio)
        fi
        [[ $LOSS == 0 ]] || gen_cmd+=(--loss "$LOSS")
        [[ -n ${EXPECTED[$proto]:-} ]] && gen_cmd+=(--expected-kbps "${EXPECTED[$proto]}" --expected-fps "${EXPECTED_FPS[$proto]}")
    else
        rate=$(awk -v n="$step" -v r="$RTMP_RAMP" -v s="$RAMP_SECS" 'BEGIN { print (n / s > r) ? n / s : r }')
        gen_cmd=("$RTMP_GEN" --url "rtmp://127.0.0.1:$RTMP_PORT/live/bench" --players "$step"
            --publisher-start-ms "$PUB_START_MS")
        [[ -n ${EXPECTED[$proto]:-} ]] && gen_cmd+=(--expected-kbps "${EXPECTED[$proto]}")
    fi
    wait_quiet
    log "$proto: $step viewers"
    if ! taskset -c 1 "${gen_cmd[@]}" --ramp-per-sec "$rate" --warmup-secs "$WARMUP" --measure-secs "$MEASURE" \
        --server-pid "${SERVER[$proto]}" --ksoftirqd-core 0 >"$out" 2>"$out.err"; then
        RES="FAIL: generator failed: $(tail -1 "$out.err")" NOISY="" ROW="| $step | | | | | | | | | $RES |"
        return
    fi
    read -r core0 core1 < <(grep -o '"core_busy_pct":\[[^]]*\]' "$out" | cut -d'[' -f2 | tr -d ']' | tr ',' ' ')
    conn=$(jget "$out" players_connected) full=$(jget "$out" players_full_rate)
    cpu=$(jget "$out" server_cpu_pct) gen=$(jget "$out" gen_cpu_pct) kbps=$(jget "$out" median_kbps)
    RES=$(awk -v n="$step" -v c="$conn" -v f="$full" -v cpu="$cpu" -v g="$gen" -v c1="$core1" \
        -v k="$kbps" -v cl="$CPU_LIMIT" -v gl="$GEN_LIMIT" 'BEGIN {
            why = "";
            if (c + 0 < n) why = n - c " viewers not playing";
            else if (f + 0 < n) why = n - f " viewers below full rate";
            else if (k + 0 < 500) why = "median viewer only " k + 0 " kbps";
            else if (cpu + 0 >= cl) why = "server CPU >= " cl "%";
            # Core 1 full while the generator is a large part of it: the generator is the limit.
            if (g + 0 >= gl || (c1 + 0 >= 97 && g + 0 >= 30))
                print (why == "" ? "ok, generator core saturated: stop" : "inconclusive (generator core saturated): " why);
            else print (why == "" ? "ok" : "FAIL: " why) }')
    NOISY=$(awk -v b="$core0" -v cpu="$cpu" -v c1="$core1" 'BEGIN {
        if (b - cpu > 15) printf " (core 0 not quiet: %.0f%% other load)", b - cpu;
        else if (c1 + 0 >= 97) printf " (core 1 saturated)" }')
    errs=$(grep -o '"errors":{[^}]*}' "$out" | cut -c10- | cut -c1-160)
    [[ $RES == ok* || $errs == "{}" ]] || RES+=" $errs"
    if [[ $proto != rtmp ]]; then
        # RSS above the server's RSS before its first WebRTC step, per viewer.
        [[ -n ${IDLE_RSS[$proto]:-} ]] || IDLE_RSS[$proto]=$(jget "$out" server_rss_base_kb)
        rss=$(awk -v e="$(jget "$out" server_rss_end_kb)" -v i="${IDLE_RSS[$proto]}" -v n="$conn" \
            'BEGIN { if (n > 0 && e != "null") printf "%.1f", (e - i) / n }')
        extra="$rss | $(jget "$out" median_fps) | $(jget "$out" video_gaps) | $(jget "$out" udp_rcvbuf_errors) / $(jget "$out" udp_sndbuf_errors) | $(jget "$out" packets_per_player_sec) | $(jget "$out" first_frame_p50_ms) / $(jget "$out" first_frame_p95_ms) |"
    else
        extra="$(jget "$out" server_data_segs_per_player_sec) |"
    fi
    ROW="| $step | $conn | $full | $cpu | $(jget "$out" ksoftirqd_cpu_pct) | $(jget "$out" server_cpu_ms_per_player_sec) | $(jget "$out" delay_p50_ms) | $(jget "$out" delay_p99_ms) | $kbps | $extra $gen | $core0 / $core1 | $RES$NOISY |"
    PASS_CPU=$cpu
}

declare -A EXPECTED EXPECTED_FPS IDLE_RSS TABLE SUMMARY PPC MS
run_proto() { # run_proto PROTO STEPS
    local proto=$1 steps=$2 step try pass=0 pass_cpu="" prev=0 prev_cpu="" reason="all steps passed" ppc=0 marginal="" rows
    if [[ $proto != rtmp ]]; then
        rows="| viewers | connected | full rate | server CPU % | of it ksoftirqd/0 % | CPU ms/viewer/s | delay p50 ms | delay p99 ms | median kbps | RSS KiB/viewer above idle | median fps | video gaps | UDP drops rcvbuf / sndbuf | datagrams/viewer/s | first frame p50 / p95 ms | generator CPU % | core 0/1 busy % | result |"
        rows+=$'\n'"|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
    else
        rows="| players | connected | full rate | server CPU % | of it ksoftirqd/0 % | CPU ms/player/s | delay p50 ms | delay p99 ms | median kbps | segments/player/s | generator CPU % | core 0/1 busy % | result |"
        rows+=$'\n'"|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
    fi
    for step in ${steps//,/ }; do
        kill -0 "${SERVER[$proto]}" 2>/dev/null || { reason="the server exited"; break; }
        kill -0 "$PUB_PID" 2>/dev/null || { reason="publisher exited: $(tail -1 "$PUB_LOG")"; break; }
        for ((try = 0; try <= RETRIES; try++)); do
            measure "$proto" "$step"
            [[ -n $NOISY && $try -lt $RETRIES ]] || break
            log "$proto: $step disturbed by other load${NOISY}; again"
        done
        rows+=$'\n'"$ROW"
        log "$ROW"
        # The first passing step calibrates the rate every later step must reach.
        if [[ -z ${EXPECTED[$proto]:-} && $RES == ok* ]]; then
            EXPECTED[$proto]=$(jget "$TMP/$proto-$step.json" median_kbps)
            [[ $proto == rtmp ]] || EXPECTED_FPS[$proto]=$(jget "$TMP/$proto-$step.json" median_fps)
        fi
        if [[ $RES == ok* ]]; then prev=$pass prev_cpu=$pass_cpu pass=$step pass_cpu=$PASS_CPU; fi
        if [[ $RES != ok ]]; then reason="step $step: $RES"; break; fi
    done
    [[ -n $pass_cpu ]] && ppc=$(awk -v n="$pass" -v c="$pass_cpu" 'BEGIN { printf "%d", (c > 0 ? n * 100 / c : 0) }')
    [[ -n $prev_cpu && $prev -gt 0 ]] && marginal=$(awk -v a="$prev" -v ca="$prev_cpu" -v b="$pass" -v cb="$pass_cpu" \
        'BEGIN { printf "%.3f", (cb - ca) * 10 / (b - a) }')
    [[ -n $pass_cpu ]] && MS[$proto]=$(awk -v n="$pass" -v c="$pass_cpu" 'BEGIN { printf "%.3f", c * 10 / n }')
    PPC[$proto]=$ppc
    SUMMARY[$proto]="| $proto | $pass | ${pass_cpu:-} | $ppc | ${MS[$proto]:-} | ${marginal:-n/a} | $reason |"
    TABLE[$proto]=$rows
    log "$proto: done ($reason)"
}

for proto in "${PROTOS[@]}"; do run_proto "$proto" "${STEPS[$proto]}"; done

echo "WebRTC and RTMP fan-out (webrtc: strom over WHEP; janus: Janus $(janus --version 2>/dev/null | grep -o '[0-9]\+\.[0-9]\+\.[0-9]\+' | head -1) streaming plugin; rtmp: strom): $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(date -u '+%F %H:%M UTC'), window ${MEASURE}s after ${WARMUP}s warm-up, load before $(cut -d' ' -f1-3 /proc/loadavg)"
for proto in "${PROTOS[@]}"; do printf '\n### %s\n\n%s\n' "$proto" "${TABLE[$proto]}"; done
printf '\n### summary\n\n| protocol | viewers served (full rate, CPU < %s%%) | server CPU %% there | viewers per core (extrapolated) | CPU ms/viewer/s there | marginal CPU ms/viewer/s (two largest passing steps) | stopped because |\n|---|---:|---:|---:|---:|---:|---|\n' "$CPU_LIMIT"
for proto in "${PROTOS[@]}"; do echo "${SUMMARY[$proto]}"; done
awk -v w="${PPC[webrtc]:-0}" -v r="${PPC[rtmp]:-0}" -v j="${PPC[janus]:-0}" 'BEGIN {
    printf "\nratio strom RTMP/WebRTC viewers per core: %s (goal: <= 2)\n", (w > 0 ? sprintf("%.2f", r / w) : "n/a")
    if (j > 0) printf "ratio Janus/strom WebRTC viewers per core: %s\n", (w > 0 ? sprintf("%.2f", j / w) : "n/a") }'
grep -E ' (WARN|ERROR) ' "$TMP/strom.log" | sort | uniq -c | sort -rn | head -5 | sed 's/^/strom log: /' >&2 || true
