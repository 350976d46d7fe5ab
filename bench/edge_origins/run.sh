#!/usr/bin/env bash
# Edge time to first frame against the holder's position in the origin list (issue 46,
# item 1: an origin without the stream answers "not found" at once; no registry).
#
# ORIGINS strom origins (RTMP, and an SRT output listener each) run side by side; one
# ffmpeg publishes live/x (320x240 testsrc2, x264 ultrafast zerolatency, 1 s GOP, AAC)
# to the origin at POSITION. A fresh edge (an `Edge` rule for `live` listing every
# origin in order, over RTMP or over SRT) is started and ffmpeg plays
# rtmp://edge/live/x until its first decoded video frame: the time from the play to
# that frame is the figure. Each binary given (this build, and with --before BIN a
# previous one, side by side in one run) is measured at every position over RTMP and
# SRT. A play that gets no frame within LIMIT s is reported as such (an RTMP player
# of the edge waits `player_wait_timeout_secs`, 30 s, for its stream).
#
# With --registry (issue 46, the cluster registry) a 3-member etcd runs on loopback
# (ports 18690-18695; bench/cluster/lib.sh), every origin has a `Cluster` block on it
# (advertising its RTMP and SRT URLs) and each row is measured twice, side by side: a
# fresh edge without a `Cluster` block ("registry off": the origins in order), then a
# fresh edge with one ("registry on": the holder's advertised URL first). The holder's
# claim is in etcd, and the registry edge connected to etcd, before its play starts.
# Each cell is then the median of --repeat (3) fresh edges, each played after a random
# wait of up to 1 s: the first frame is the pull's first keyframe (1 s GOP), and plays
# at a fixed rhythm otherwise land each column at its own phase of the GOP (a run
# without the waits had every RTMP "on" cell 0.45 s above its "off" cell, all of it
# the wait for the next keyframe).
#
#   bash bench/edge_origins/run.sh [--no-build] [--before BIN] [--origins 8]
#                                  [--positions "1 2 4 8"] [--limit 60] [--registry]
#                                  [--repeat N]
# Prints a Markdown table.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
STROM_BIN=${STROM_BIN:-${CARGO_TARGET_DIR:-$ROOT/target}/release/strom}
BUILD=1
BEFORE=
ORIGINS=8
POSITIONS="1 2 4 8"
LIMIT=60
BASE=18600
REGISTRY=0
REPEAT=
ETCD_PORT=18690

while (($#)); do
    case $1 in
        --no-build) BUILD=0 ;;
        --before) BEFORE=$2; shift ;;
        --origins) ORIGINS=$2; shift ;;
        --positions) POSITIONS=$2; shift ;;
        --limit) LIMIT=$2; shift ;;
        --registry) REGISTRY=1 ;;
        --repeat) REPEAT=$2; shift ;;
        -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

die() { echo "run.sh: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || die "$1 not found: install the Debian package $2"; }
need ffmpeg ffmpeg
need curl curl

REPEAT=${REPEAT:-$((REGISTRY ? 3 : 1))}
((REPEAT >= 1)) || die "--repeat needs a positive count"

if ((BUILD)); then
    (cd "$ROOT" && cargo build --release -p strom >&2)
fi
[[ -x $STROM_BIN ]] || die "$STROM_BIN missing (cargo build --release -p strom)"
[[ -z $BEFORE || -x $BEFORE ]] || die "$BEFORE is not an executable"

dir=$(mktemp -d)
PIDS=()
ETCD_PIDS=()
cleanup() {
    for pid in "${PIDS[@]}" "${ETCD_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$dir"
}
trap cleanup EXIT

# shellcheck source=bench/strom.sh
source "$ROOT/bench/strom.sh"
if ((REGISTRY)); then
    # shellcheck source=bench/cluster/lib.sh
    source "$ROOT/bench/cluster/lib.sh"
    etcd_start "$dir" "$ETCD_PORT"
fi

# Ports of server i (0-based): HTTP, management, RTMP, SRT.
http_port() { echo $((BASE + 10 * $1)); }
mgmt_port() { echo $((BASE + 10 * $1 + 1)); }
rtmp_port() { echo $((BASE + 10 * $1 + 2)); }
srt_port() { echo $((BASE + 10 * $1 + 3)); }

# start_server I RULES: a strom in $dir/sI on every core, STROM_PID set.
start_server() {
    local d=$dir/s$1
    rm -rf "$d" && mkdir -p "$d"
    echo "$2" >"$d/rules.conf"
    strom_start "$d" "$(http_port "$1")" "$(mgmt_port "$1")" 0-1 || die "server $1 did not start"
}

stop_pid() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

# Seconds from the play to the first decoded video frame through edge E, or "none".
first_frame() {
    local url="rtmp://127.0.0.1:$(rtmp_port "$1")/live/x" started ended
    started=$(date +%s.%N)
    if timeout "$LIMIT" ffmpeg -hide_banner -nostdin -v error -i "$url" -map 0:v:0 \
        -frames:v 1 -f null - 2>/dev/null; then
        ended=$(date +%s.%N)
        python3 -c "print(f'{$ended - $started:.2f}')"
    else
        echo "none within ${LIMIT} s"
    fi
}

# A rules.conf "Cluster" member for server ID (with --registry), else nothing.
cluster() {
    ((REGISTRY)) || return 0
    cluster_block "$1" 5 "\"rtmp://127.0.0.1:$(rtmp_port "$2")\", \"srt://127.0.0.1:$(srt_port "$2")?latency=200\""
}

# Waits until origin I holds live/x in the registry (with --registry).
wait_claimed() {
    ((REGISTRY)) || return 0
    for _ in $(seq 100); do
        cluster_state "$(mgmt_port "$1")" | grep -q '"claims":1' && return 0
        sleep 0.1
    done
    die "origin $1 did not claim live/x"
}

# Waits until origin I released live/x (with --registry): the next origin's publish of
# the name would be refused while it holds it.
wait_released() {
    ((REGISTRY)) || return 0
    for _ in $(seq 100); do
        cluster_state "$(mgmt_port "$1")" | grep -q '"claims":0' && return 0
        sleep 0.1
    done
    die "origin $1 did not release live/x"
}

# The time to first frame through a fresh edge listing ORIGINS (JSON items), with a
# `Cluster` block when REGISTERED is 1 (and connected to etcd before the play); with
# --repeat N, the median of N fresh edges, each played after a random wait of up to 1 s
# (the GOP: the first frame is the pull's first keyframe, so a fixed rhythm of plays
# would land each column at its own phase of the GOP).
edge_plays() { # origins registered
    local times=() n edge cluster=
    for ((n = 0; n < REPEAT; n++)); do
        ((!$2)) || cluster=$(cluster_block "edge-$RANDOM$RANDOM" 5 "")
        start_server 0 "{$cluster \"RtmpSettings\": {\"interfaces\": [{\"ip\": \"127.0.0.1\", \"port\": $(rtmp_port 0)}]},
 \"Delivery\": {\"outputs\": []},
 \"Edge\": [{\"apps\": [\"live\"], \"idle_grace_secs\": 5, \"origins\": [$1]}]}"
        edge=$STROM_PID
        if (($2)); then
            wait_cluster_connected "$(mgmt_port 0)" || die "the edge did not connect to etcd"
        fi
        ((REPEAT == 1)) || sleep "$(printf '0.%03d' $((RANDOM % 1000)))"
        times+=("$(first_frame 0)")
        stop_pid "$edge"
    done
    if ((REPEAT == 1)); then
        echo "${times[0]}"
    else # the median; a play without a frame sorts last
        printf '%s\n' "${times[@]}" | sed 's/^none.*/999999/' | sort -g | sed -n "$(((REPEAT + 1) / 2))p" \
            | sed "s/^999999\$/none within ${LIMIT} s/"
    fi
}

if ((REGISTRY)); then
    echo "| build | origins over | holder position | registry off: first frame s | registry on: first frame s |"
    echo "|---|---|---:|---:|---:|"
else
    echo "| build | origins over | holder position | time to first frame s |"
    echo "|---|---|---:|---:|"
fi
measure() { # label binary
    STROM_BIN=$2
    local origins=() i pos proto list edge publisher off on
    for ((i = 1; i <= ORIGINS; i++)); do
        start_server "$i" "{$(cluster "origin-$i" "$i") \"RtmpSettings\": {\"interfaces\": [{\"ip\": \"127.0.0.1\", \"port\": $(rtmp_port "$i")}]},
 \"Delivery\": {\"outputs\": []},
 \"TsOutputs\": [{\"id\": \"edges\", \"protocol\": \"srt\", \"mode\": \"listen\", \"ip\": \"127.0.0.1\", \"port\": $(srt_port "$i")}]}"
        origins+=("$STROM_PID")
        PIDS+=("$STROM_PID")
    done
    for pos in $POSITIONS; do
        ((pos <= ORIGINS)) || continue
        ffmpeg -hide_banner -loglevel error -re -f lavfi -i testsrc2=size=320x240:rate=30 \
            -f lavfi -i sine=frequency=440:sample_rate=48000 -c:v libx264 -preset ultrafast \
            -tune zerolatency -g 30 -pix_fmt yuv420p -c:a aac -b:a 64k \
            -f flv "rtmp://127.0.0.1:$(rtmp_port "$pos")/live/x" </dev/null &
        publisher=$!
        PIDS+=("$publisher")
        for _ in $(seq 100); do
            curl -s "http://127.0.0.1:$(mgmt_port "$pos")/manage/live_streams_status" | grep -q '"x"' && break
            sleep 0.1
        done
        wait_claimed "$pos"
        for proto in rtmp srt; do
            list=
            for ((i = 1; i <= ORIGINS; i++)); do
                if [[ $proto == rtmp ]]; then
                    list+="\"rtmp://127.0.0.1:$(rtmp_port "$i")\","
                else
                    list+="\"srt://127.0.0.1:$(srt_port "$i")?latency=200\","
                fi
            done
            off=$(edge_plays "${list%,}" 0)
            if ((REGISTRY)); then
                on=$(edge_plays "${list%,}" 1)
                echo "| $1 | ${proto^^} | $pos of $ORIGINS | $off | $on |"
            else
                echo "| $1 | ${proto^^} | $pos of $ORIGINS | $off |"
            fi
        done
        stop_pid "$publisher"
        wait_released "$pos"
        sleep 1
    done
    for i in "${origins[@]}"; do stop_pid "$i"; done
}

measure "this build" "$STROM_BIN"
if [[ -n $BEFORE ]]; then
    measure "before ($(basename "$BEFORE"))" "$BEFORE"
fi
