# Shared by the bench/*/run.sh scripts (sourced): start a strom and wait for its workers.
#
#   strom_start DIR HTTP_PORT MGMT_PORT [CPUS]
# writes DIR/strom.conf (loopback only, warn logging, rules in DIR/rules.conf, which the
# caller writes first), starts $STROM_BIN pinned to CPUS (default core 0) with its log in
# DIR/strom.log, sets STROM_PID and returns once every worker reports "ready" (fails,
# stopping it, after 20 s).

strom_start() {
    local dir=$1 http=$2 mgmt=$3 cpus=${4:-0} state=
    cat >"$dir/strom.conf" <<CONF
listen_interfaces = 127.0.0.1
port = $http
management_listen_interfaces = 127.0.0.1
management_port = $mgmt
rules_path = rules.conf
data_dir = data
run_dir = run
logging = warn
http_max_connections_per_ip = 100000
CONF
    taskset -c "$cpus" "$STROM_BIN" run --config "$dir/strom.conf" >"$dir/strom.log" 2>&1 &
    STROM_PID=$!
    for _ in $(seq 200); do
        state=$(curl -s "http://127.0.0.1:$mgmt/manage/workers" | grep -o '"state":"[a-z_]*"' | sort -u | tr -d '\n' || true)
        [[ $state == '"state":"ready"' ]] && return 0
        sleep 0.1
    done
    echo "strom not ready: $(tail -3 "$dir/strom.log")" >&2
    kill "$STROM_PID" 2>/dev/null
    return 1
}
