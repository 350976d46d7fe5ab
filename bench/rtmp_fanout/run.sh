#!/usr/bin/env bash
# RTMP fan-out benchmark: strom and nginx-rtmp (Debian's libnginx-mod-rtmp) side by side.
#
# For each server in turn: the server is pinned to core 0 (strom's supervisor and every
# worker inherit the pinning), one ffmpeg publisher (600 kbps test source) and the load
# generator `rtmp-fanout` are pinned to core 1. Players are added in steps; each step is a
# fresh generator run (ramp <= --ramp-secs, --warmup-secs, --measure-secs), which samples the
# server's process tree plus ksoftirqd/0 (utime+stime) at both ends of the measurement window
# and its VmRSS before the players connect and at the end. A step passes when every player
# connected and received >= 95% of the expected bytes (the stream rate is calibrated by the
# first step's median player, or --expected-kbps) and the server stayed under --cpu-limit %
# of one core. A server's run stops at the first step that does not pass, or where the
# generator's core saturated (then the step says nothing more about the server). Before each
# step the script waits for both cores to be free of other load, and repeats a step that
# other load disturbed (--retries).
#
# "players served" is the largest passing step; "players per core" is that step divided by
# the server's CPU fraction there (extrapolated to one full core). "RSS above idle" is the
# server's RSS at the end of the window minus its RSS before the first step, per player.
# "segments/player/s" and "bytes/segment" count the TCP data segments the server sent in the
# window (the kernel's counters, through `ss -ti`): on loopback the kernel's work per segment
# is most of a server's CPU per player.
# Traffic goes to 127.0.0.1 only; nothing is installed; results go to stdout (markdown).
#
# With --only rtsp, strom's RTSP play fan-out (TCP interleaved, `strom_rtsp`) is measured
# beside its RTMP fan-out in the same run: same publisher (RTMP), same steps, the generator's
# RTSP players (DESCRIBE, SETUP per track, PLAY; bytes only, no delay probes). --only all
# runs nginx, strom and strom_rtsp. No RTSP server is packaged in Debian to compare with.
#
#   bash bench/rtmp_fanout/run.sh [--only nginx|strom|rtsp|both|all] [--steps 50,100,...] [--measure-secs N]
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
ONLY=both
STEPS=50,100,200,400,800,1600,2400,3200,4000,4800,6400
MEASURE=15
WARMUP=4
RAMP_RATE=200   # players/s, raised so that a step's ramp takes at most RAMP_SECS
RAMP_SECS=8
CPU_LIMIT=90
GEN_LIMIT=90
NGINX_PORT=19350
STROM_PORT=19351
STROM_HTTP_PORT=18091
STROM_RTSP_PORT=18554
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
STROM_BIN=$TARGET_DIR/release/strom
GEN=$TARGET_DIR/release/rtmp-fanout
BUILD=1
KEEP=0
# strom's limits.play_coalesce_ms and play_nodelay; empty keeps strom's defaults.
STROM_COALESCE_MS=
STROM_NODELAY=
QUIET_WAIT=120  # before each step, wait up to this long for the cores to be free of other load
RETRIES=2       # repeat a step disturbed by other load on the cores up to this often
EXPECTED_KBPS=  # stream rate a player needs (x 0.95); default: the first step's median player

usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; cat <<EOF
options: --only nginx|strom|both ($ONLY)  --steps LIST ($STEPS)  --measure-secs N ($MEASURE, >= 10:
         shorter windows make the per-player byte counts too coarse for the 95% test)
         --warmup-secs N ($WARMUP)  --ramp-per-sec N ($RAMP_RATE)  --ramp-secs N ($RAMP_SECS)
         --cpu-limit PCT ($CPU_LIMIT)  --gen-limit PCT ($GEN_LIMIT)  --nginx-port P ($NGINX_PORT)
         --strom-port P ($STROM_PORT)  --strom-http-port P ($STROM_HTTP_PORT)  --strom-rtsp-port P ($STROM_RTSP_PORT)
         --strom-bin PATH ($STROM_BIN)  --quiet-wait SECS ($QUIET_WAIT)  --retries N ($RETRIES)  --expected-kbps K  --no-build
         --keep (keep the temp dir with logs and JSON)  --strom-coalesce-ms MS (strom's play_coalesce_ms; default: strom's own)
         --strom-nodelay true|false (strom's play_nodelay; default: strom's own)
EOF
}

while (($#)); do
    case $1 in
        --only) ONLY=$2; shift ;;
        --steps) STEPS=$2; shift ;;
        --measure-secs) MEASURE=$2; shift ;;
        --warmup-secs) WARMUP=$2; shift ;;
        --ramp-per-sec) RAMP_RATE=$2; shift ;;
        --ramp-secs) RAMP_SECS=$2; shift ;;
        --cpu-limit) CPU_LIMIT=$2; shift ;;
        --gen-limit) GEN_LIMIT=$2; shift ;;
        --nginx-port) NGINX_PORT=$2; shift ;;
        --strom-port) STROM_PORT=$2; shift ;;
        --strom-http-port) STROM_HTTP_PORT=$2; shift ;;
        --strom-rtsp-port) STROM_RTSP_PORT=$2; shift ;;
        --strom-bin) STROM_BIN=$2; shift ;;
        --quiet-wait) QUIET_WAIT=$2; shift ;;
        --retries) RETRIES=$2; shift ;;
        --expected-kbps) EXPECTED_KBPS=$2; shift ;;
        --no-build) BUILD=0 ;;
        --keep) KEEP=1 ;;
        --strom-coalesce-ms) STROM_COALESCE_MS=$2; shift ;;
        --strom-nodelay) STROM_NODELAY=$2; shift ;;
        -h|--help) usage; exit 0 ;;
        *) echo "unknown option $1" >&2; usage >&2; exit 2 ;;
    esac
    shift
done
case $ONLY in nginx) SERVERS=(nginx) ;; strom) SERVERS=(strom) ;; both) SERVERS=(nginx strom) ;;
    rtsp) SERVERS=(strom strom_rtsp) ;; all) SERVERS=(nginx strom strom_rtsp) ;;
    *) echo "--only takes nginx, strom, rtsp, both or all" >&2; exit 2 ;; esac

die() { echo "run.sh: $*" >&2; exit 1; }
need() { command -v "$1" >/dev/null || die "$1 not found: install the Debian package $2"; }
need nginx nginx
need ffmpeg ffmpeg
need taskset util-linux
need ss iproute2
[[ -f /usr/lib/nginx/modules/ngx_rtmp_module.so ]] ||
    die "/usr/lib/nginx/modules/ngx_rtmp_module.so not found: install the Debian package libnginx-mod-rtmp"
(($(nproc) >= 2)) || die "needs 2 cores (server on core 0, publisher and players on core 1)"

if ((BUILD)); then
    pkgs=(-p strom-bench-rtmp-fanout)
    [[ $ONLY == nginx ]] || pkgs+=(-p strom)
    (cd "$ROOT" && CARGO_TARGET_DIR=$TARGET_DIR cargo build --release "${pkgs[@]}") >&2
fi
[[ -x $GEN ]] || die "$GEN missing (cargo build --release -p strom-bench-rtmp-fanout)"

ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
TMP=$(mktemp -d /tmp/rtmp-fanout.XXXXXX)
cleanup() { # ends only this script's own background jobs (servers, publisher)
    for pid in $(jobs -p); do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    if ((KEEP)); then echo "logs and JSON kept in $TMP" >&2; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# jget FILE KEY: a number (or null) from the generator's flat JSON.
jget() { grep -o "\"$2\":[^,}]*" "$1" | head -1 | cut -d: -f2; }
log() { echo "[$(date +%T)] $*" >&2; }

wait_port() { # wait_port PORT PID: until PORT accepts or PID died (10 s)
    for _ in $(seq 100); do
        kill -0 "$2" 2>/dev/null || return 1
        (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
        sleep 0.1
    done
    return 1
}

start_nginx() {
    local dir=$TMP/nginx
    mkdir -p "$dir"
    cat >"$dir/nginx.conf" <<EOF
load_module /usr/lib/nginx/modules/ngx_rtmp_module.so;
worker_processes 1;
daemon off;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 19000; }
rtmp { server { listen 127.0.0.1:$NGINX_PORT; application live { live on; } } }
EOF
    taskset -c 0 nginx -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" >"$dir/stdout.log" 2>&1 &
    SERVER_PID=$!
    wait_port "$NGINX_PORT" "$SERVER_PID" || { FAIL="nginx did not start: $(tail -1 "$dir/error.log")"; return 1; }
}

start_strom() {
    local dir=$TMP/strom
    mkdir -p "$dir"
    [[ -x $STROM_BIN ]] || { FAIL="$STROM_BIN missing"; return 1; }
    cat >"$dir/strom.conf" <<EOF
listen_interfaces = 127.0.0.1
port = $STROM_HTTP_PORT
rules_path = rules.conf
data_dir = data
run_dir = run
logging = warn
EOF
    local coalesce=""
    [[ -n $STROM_COALESCE_MS ]] && coalesce=", \"play_coalesce_ms\": $STROM_COALESCE_MS"
    [[ -n $STROM_NODELAY ]] && coalesce="$coalesce, \"play_nodelay\": $STROM_NODELAY"
    cat >"$dir/rules.conf" <<EOF
{
  "RtmpSettings": {
    "interfaces": [{ "ip": "127.0.0.1", "port": $STROM_PORT }],
    "protocols": ["RTMP"],
    "apps": [],
    "limits": { "max_connections": 19000, "max_players": 19000,
                "max_connections_per_ip": 19000$coalesce }
  },
  "RtspSettings": {
    "interfaces": [{ "ip": "127.0.0.1", "port": $STROM_RTSP_PORT }],
    "limits": { "max_connections": 19000, "max_connections_per_ip": 19000 }
  }
}
EOF
    taskset -c 0 "$STROM_BIN" run --config "$dir/strom.conf" >"$dir/strom.log" 2>&1 &
    SERVER_PID=$!
    wait_port "$STROM_PORT" "$SERVER_PID" || { FAIL="strom did not start: $(tail -1 "$dir/strom.log")"; return 1; }
}

# strom again, its RTSP listener measured (the publisher still publishes over RTMP).
start_strom_rtsp() {
    mkdir -p "$TMP/strom_rtsp"
    start_strom
}

start_publisher() { # start_publisher NAME PORT
    PUB_LOG=$TMP/$1/ffmpeg.log
    PUB_START_MS=$(date +%s%3N)
    taskset -c 1 ffmpeg -nostdin -loglevel warning -re \
        -f lavfi -i testsrc2=size=640x360:rate=30 -f lavfi -i sine \
        -c:v libx264 -preset ultrafast -tune zerolatency -b:v 550k -maxrate 550k -bufsize 1100k -g 60 \
        -c:a aac -b:a 48k -f flv "rtmp://127.0.0.1:$2/live/bench" >"$PUB_LOG" 2>&1 &
    PUB_PID=$!
    sleep 3
    kill -0 "$PUB_PID" 2>/dev/null || { FAIL="publish failed: $(tail -1 "$PUB_LOG")"; return 1; }
}

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

stop() { for pid in "$@"; do kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; done; }

# measure NAME PORT STEP: one generator run; sets RES (ok..., FAIL..., inconclusive...),
# NOISY (non-empty when other load disturbed the cores) and ROW (a markdown table row).
measure() {
    local name=$1 port=$2 step=$3 out=$TMP/$1/step-$3.json rate conn full cpu gen kbps core0 core1 errs rss
    local url="rtmp://127.0.0.1:$port/live/bench"
    [[ $name == strom_rtsp ]] && url="rtsp://127.0.0.1:$STROM_RTSP_PORT/live/bench"
    rate=$(awk -v n="$step" -v r="$RAMP_RATE" -v s="$RAMP_SECS" 'BEGIN { print (n / s > r) ? n / s : r }')
    wait_quiet
    log "$name: $step players"
    if ! taskset -c 1 "$GEN" --url "$url" --players "$step" \
        --ramp-per-sec "$rate" --warmup-secs "$WARMUP" --measure-secs "$MEASURE" \
        ${EXPECTED:+--expected-kbps "$EXPECTED"} --server-pid "$SERVER_PID" --ksoftirqd-core 0 --publisher-start-ms "$PUB_START_MS" \
        >"$out" 2>"$out.err"; then
        RES="FAIL: generator failed: $(tail -1 "$out.err")" NOISY="" ROW="| $step | | | | | | | | | | | | $RES |"
        return
    fi
    read -r core0 core1 < <(grep -o '"core_busy_pct":\[[^]]*\]' "$out" | cut -d'[' -f2 | tr -d ']' | tr ',' ' ')
    conn=$(jget "$out" players_connected) full=$(jget "$out" players_full_rate)
    cpu=$(jget "$out" server_cpu_pct) gen=$(jget "$out" gen_cpu_pct) kbps=$(jget "$out" median_kbps)
    RES=$(awk -v n="$step" -v c="$conn" -v f="$full" -v cpu="$cpu" -v g="$gen" -v c1="$core1" \
        -v k="$kbps" -v cl="$CPU_LIMIT" -v gl="$GEN_LIMIT" 'BEGIN {
            why = "";
            if (c + 0 < n) why = n - c " players not playing";
            else if (f + 0 < n) why = n - f " players below full rate";
            else if (k + 0 < 500) why = "median player only " k + 0 " kbps";
            else if (cpu + 0 >= cl) why = "server CPU >= " cl "%";
            # Core 1 full while the generator is a large part of it: the generator is the limit.
            if (g + 0 >= gl || (c1 + 0 >= 97 && g + 0 >= 30))
                print (why == "" ? "ok, generator core saturated: stop" : "inconclusive (generator core saturated): " why);
            else print (why == "" ? "ok" : "FAIL: " why) }')
    # Core 0 should run nothing but the server, core 1 only the publisher and the generator.
    NOISY=$(awk -v b="$core0" -v cpu="$cpu" -v c1="$core1" 'BEGIN {
        if (b - cpu > 15) printf " (core 0 not quiet: %.0f%% other load)", b - cpu;
        else if (c1 + 0 >= 97) printf " (core 1 saturated)" }')
    errs=$(grep -o '"errors":{[^}]*}' "$out" | cut -c10- | cut -c1-120)
    [[ $RES == ok* || $errs == "{}" ]] || RES+=" $errs"
    [[ -n $IDLE_RSS ]] || IDLE_RSS=$(jget "$out" server_rss_base_kb)
    rss=$(awk -v e="$(jget "$out" server_rss_end_kb)" -v i="$IDLE_RSS" -v n="$conn" \
        'BEGIN { if (n > 0 && e != "null") printf "%.1f", (e - i) / n }')
    ROW="| $step | $conn | $full | $cpu | $(jget "$out" ksoftirqd_cpu_pct) | $(jget "$out" server_cpu_ms_per_player_sec) | $(jget "$out" server_data_segs_per_player_sec) | $(jget "$out" server_bytes_per_seg) | $rss | $(jget "$out" delay_p50_ms) | $(jget "$out" delay_p99_ms) | $kbps | $gen | $core0 / $core1 | $RES$NOISY |"
    PASS_CELLS="$(jget "$out" server_cpu_ms_per_player_sec) | $rss | $(jget "$out" delay_p50_ms) | $(jget "$out" delay_p99_ms)"
    PASS_CPU=$cpu
}

# run_server NAME: fills TABLE_<NAME>, SUMMARY_<NAME>, PPC_<NAME> and SERVED_<NAME>.
run_server() {
    local name=$1 port step try pass=0 pass_cpu="" pass_row=" |  |  | " reason="all steps passed" ppc=0
    local rows="| players | connected | full rate | server CPU % | of it ksoftirqd/0 % | CPU ms/player/s | segments/player/s | bytes/segment | RSS KiB/player above idle | delay p50 ms | delay p99 ms | median kbps | generator CPU % | core 0/1 busy % | result |"
    rows+=$'\n'"|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|"
    FAIL="" PUB_PID="" SERVER_PID="" IDLE_RSS="" EXPECTED=$EXPECTED_KBPS
    [[ $name == nginx ]] && port=$NGINX_PORT || port=$STROM_PORT
    log "$name: starting"
    if "start_$name" && start_publisher "$name" "$port"; then
        for step in ${STEPS//,/ }; do
            kill -0 "$SERVER_PID" 2>/dev/null || { reason="$name exited"; break; }
            kill -0 "$PUB_PID" 2>/dev/null || { reason="publisher exited: $(tail -1 "$PUB_LOG")"; break; }
            for ((try = 0; try <= RETRIES; try++)); do
                measure "$name" "$port" "$step"
                [[ -n $NOISY && $try -lt $RETRIES ]] || break
                log "$name: $step players disturbed by other load${NOISY}; again"
            done
            rows+=$'\n'"$ROW"
            # The first passing step calibrates the stream rate every later step must reach.
            [[ -n $EXPECTED || $RES != ok* ]] || EXPECTED=$(jget "$TMP/$name/step-$step.json" median_kbps)
            if [[ $RES == ok* ]]; then pass=$step pass_cpu=$PASS_CPU pass_row=$PASS_CELLS; fi
            if [[ $RES != ok ]]; then reason="step $step: $RES"; break; fi
        done
    else
        reason=$FAIL
        rows+=$'\n'"| - | | | | | | | | | | | | $name failed: $FAIL |"
    fi
    stop "$PUB_PID" "$SERVER_PID"
    [[ -n $pass_cpu ]] && ppc=$(awk -v n="$pass" -v c="$pass_cpu" 'BEGIN { printf "%d", (c > 0 ? n * 100 / c : 0) }')
    printf -v "SUMMARY_$name" '| %s | %s | %s | %s | %s |' "$name" "$pass" "$ppc" "$pass_row" "$reason"
    printf -v "PPC_$name" '%s' "$ppc"
    printf -v "SERVED_$name" '%s' "$pass"
    printf -v "TABLE_$name" '%s' "$rows"
    log "$name: done ($reason)"
}

PUB_PID=""; SERVER_PID=""
for s in "${SERVERS[@]}"; do run_server "$s"; done

echo "RTMP fan-out: $(nproc) cores ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')), $(date -u +%F), steps $STEPS, window ${MEASURE}s after ${WARMUP}s warm-up"
for s in "${SERVERS[@]}"; do
    t=TABLE_$s
    printf '\n### %s\n\n%s\n' "$s" "${!t}"
done
printf '\n### summary\n\n| server | players served (full rate, CPU < %s%%) | players per core (extrapolated) | CPU ms/player/s | RSS KiB/player above idle | delay p50 ms | delay p99 ms | stopped because |\n|---|---:|---:|---:|---:|---:|---:|---|\n' "$CPU_LIMIT"
for s in "${SERVERS[@]}"; do v=SUMMARY_$s; echo "${!v}"; done
if [[ $ONLY == both ]]; then
    awk -v sp="${PPC_strom:-0}" -v np="${PPC_nginx:-0}" -v ss="${SERVED_strom:-0}" -v ns="${SERVED_nginx:-0}" 'BEGIN {
        printf "\nratio strom/nginx: players per core %s, players served %s (target: >= 2.5)\n",
            (np > 0 ? sprintf("%.2f", sp / np) : "n/a"), (ns > 0 ? sprintf("%.2f", ss / ns) : "n/a") }'
fi
if [[ $ONLY == rtsp || $ONLY == all ]]; then
    awk -v rp="${PPC_strom_rtsp:-0}" -v sp="${PPC_strom:-0}" 'BEGIN {
        printf "\nratio strom RTSP/RTMP: players per core %s\n", (sp > 0 ? sprintf("%.2f", rp / sp) : "n/a") }'
fi
