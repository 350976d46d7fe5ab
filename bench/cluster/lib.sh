# Shared by the cluster registry benchmarks (bench/cluster/*.sh and
# bench/edge_origins/run.sh --registry), sourced:
#
#   etcd_start DIR CLIENT_PORT [MEMBERS]
#       starts an etcd cluster of MEMBERS (3) on loopback: member i listens for clients on
#       CLIENT_PORT+2i and for peers on CLIENT_PORT+2i+1, its data and log in DIR/etcd;
#       sets ETCD_PIDS (array) and ETCD_ENDPOINTS (JSON list items, for rules.conf) and
#       returns once every member answers /health (fails after 60 s). Heartbeat 200 ms,
#       election timeout 2 s (as the tests' etcd: a busy two-core machine must not cost
#       the cluster its leader); more flags for every member in $ETCD_FLAGS.
#   etcd_stop
#   strom_start_session DIR HTTP_PORT MGMT_PORT [CPUS]
#       bench/strom.sh's strom_start (DIR/rules.conf written first), with strom the leader
#       of its own session (setsid) and logging at $STROM_LOGGING (warn): STROM_PID is
#       then the session id, and kill_session STROM_PID kills the supervisor and every
#       worker at once, as a crash would (kill -9 of the whole process tree).
#   kill_session SID       SIGKILL to every process of session SID.
#   stop_session SID       SIGTERM to the supervisor (it revokes its lease and stops its
#                          workers), SIGKILL to whatever of the session is left after 10 s.
#   stop_all_sessions      stop_session for every session strom_start_session started.
#   cluster_block ID TTL ADVERTISE_JSON_ITEMS
#       a rules.conf "Cluster" member (with its trailing comma) on the etcd cluster.
#   cluster_state MGMT_PORT        GET /manage/cluster (JSON on stdout).
#   wait_cluster_connected MGMT_PORT [SECONDS]
#
# Needs etcd (Debian package etcd-server), curl, python3 and setsid (util-linux).

ETCD_PIDS=()
ETCD_ENDPOINTS=
STROM_SESSIONS=()

cluster_die() { echo "${0##*/}: $*" >&2; exit 1; }
cluster_need() { command -v "$1" >/dev/null || cluster_die "$1 not found: install the Debian package $2"; }

cluster_need etcd etcd-server
cluster_need curl curl
cluster_need python3 python3
cluster_need setsid util-linux
cluster_need taskset util-linux
cluster_need pkill procps

etcd_start() {
    local dir=$1 base=$2 members=${3:-3} i initial= token client peer
    token="strom-bench-$$-$(date +%s%N)"
    for ((i = 0; i < 2 * members; i++)); do
        if (echo >"/dev/tcp/127.0.0.1/$((base + i))") 2>/dev/null; then
            cluster_die "port $((base + i)) is in use (an etcd left from an earlier run?)"
        fi
    done
    mkdir -p "$dir/etcd"
    for ((i = 0; i < members; i++)); do
        initial+="m$i=http://127.0.0.1:$((base + 2 * i + 1)),"
    done
    ETCD_PIDS=()
    ETCD_ENDPOINTS=
    for ((i = 0; i < members; i++)); do
        client=http://127.0.0.1:$((base + 2 * i))
        peer=http://127.0.0.1:$((base + 2 * i + 1))
        etcd --name "m$i" --data-dir "$dir/etcd/m$i" \
            --listen-client-urls "$client" --advertise-client-urls "$client" \
            --listen-peer-urls "$peer" --initial-advertise-peer-urls "$peer" \
            --initial-cluster "${initial%,}" --initial-cluster-token "$token" \
            --initial-cluster-state new --heartbeat-interval 200 --election-timeout 2000 \
            --logger zap --log-level warn ${ETCD_FLAGS:-} >"$dir/etcd/m$i.log" 2>&1 </dev/null &
        ETCD_PIDS+=("$!")
        ETCD_ENDPOINTS+="\"$client\","
    done
    ETCD_ENDPOINTS=${ETCD_ENDPOINTS%,}
    for ((i = 0; i < members; i++)); do
        local healthy=0
        for _ in $(seq 600); do
            if curl -s --max-time 2 "http://127.0.0.1:$((base + 2 * i))/health" | grep -q '"health":"true"'; then
                healthy=1
                break
            fi
            kill -0 "${ETCD_PIDS[i]}" 2>/dev/null || break
            sleep 0.1
        done
        ((healthy)) || { tail -5 "$dir/etcd/m$i.log" >&2; cluster_die "etcd member m$i not healthy"; }
    done
}

etcd_stop() {
    local pid
    for pid in "${ETCD_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${ETCD_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    ETCD_PIDS=()
}

# bench/strom.sh's strom_start with strom the leader of a new session (setsid does not
# fork: a background job of a non-interactive shell is no process group leader, so the
# pid is strom's) and the log level in $STROM_LOGGING (default warn).
strom_start_session() {
    local dir=$1 http=$2 mgmt=$3 cpus=${4:-0} state= sid
    cat >"$dir/strom.conf" <<CONF
listen_interfaces = 127.0.0.1
port = $http
management_listen_interfaces = 127.0.0.1
management_port = $mgmt
rules_path = rules.conf
data_dir = data
run_dir = run
logging = ${STROM_LOGGING:-warn}
http_max_connections_per_ip = 100000
CONF
    taskset -c "$cpus" setsid "${STROM_BIN:?}" run --config "$dir/strom.conf" >"$dir/strom.log" 2>&1 &
    STROM_PID=$!
    STROM_SESSIONS+=("$STROM_PID")
    for _ in $(seq 200); do
        state=$(curl -s "http://127.0.0.1:$mgmt/manage/workers" | grep -o '"state":"[a-z_]*"' | sort -u | tr -d '\n' || true)
        if [[ $state == '"state":"ready"' ]]; then
            sid=$(ps -o sid= -p "$STROM_PID" | tr -d ' ')
            [[ $sid == "$STROM_PID" ]] || cluster_die "strom $STROM_PID is in session $sid, not its own"
            return 0
        fi
        sleep 0.1
    done
    echo "strom not ready: $(tail -3 "$dir/strom.log")" >&2
    kill_session "$STROM_PID"
    return 1
}

kill_session() {
    local own
    own=$(ps -o sid= -p $$ | tr -d ' ')
    [[ -n $1 && $1 != "$own" ]] || cluster_die "refusing to kill session ${1:-?} (this script's own)"
    # Reaped here (when it is this shell's child), with bash's "Killed" notice silenced.
    { pkill -9 -s "$1"; wait "$1"; } 2>/dev/null || true
}

stop_session() {
    local sid=$1
    kill "$sid" 2>/dev/null || true
    for _ in $(seq 100); do
        pgrep -s "$sid" >/dev/null 2>&1 || break
        sleep 0.1
    done
    kill_session "$sid"
    wait "$sid" 2>/dev/null || true
}

stop_all_sessions() {
    local sid
    for sid in "${STROM_SESSIONS[@]}"; do
        if pgrep -s "$sid" >/dev/null 2>&1; then stop_session "$sid"; fi
    done
    STROM_SESSIONS=()
}

cluster_block() {
    echo "\"Cluster\": {\"server_id\": \"$1\", \"etcd_endpoints\": [$ETCD_ENDPOINTS], \"advertise\": [$3], \"lease_ttl_secs\": $2, \"key_prefix\": \"/strom/\"},"
}

cluster_state() {
    curl -s --max-time 5 "http://127.0.0.1:$1/manage/cluster"
}

wait_cluster_connected() {
    local tries=$((${2:-20} * 10))
    for _ in $(seq "$tries"); do
        cluster_state "$1" | grep -q '"connected":true' && return 0
        sleep 0.1
    done
    return 1
}
