# Shared by bench/webrtc_latency/run.sh and bench/webrtc_fanout/run.sh (sourced): start
# Debian's Janus (package janus, 1.1) as the WebRTC peer server beside strom.
#
#   janus_start DIR HTTP_PORT CPUS MOUNT...
# writes DIR/janus/*.jcfg: the REST API on 127.0.0.1:HTTP_PORT (/janus), ICE (full ICE, as
# Janus always is) on the machine's first global IPv4 address only, set in JANUS_IP (libnice
# gathers no loopback candidate; traffic to a local address stays on the loopback device
# all the same, so clients bind to JANUS_IP), one static event loop (not a thread per viewer:
# Janus's setting for many viewers), sessions kept 120 s without a keep-alive, and only the
# streaming plugin, with one RTP mountpoint per MOUNT "ID:VIDEO_PORT:AUDIO_PORT" (H.264
# packetization mode 1 in, passed through; Opus). Starts janus pinned to CPUS with its
# log in DIR/janus.log, sets JANUS_PID and returns once the API answers (fails, stopping
# it, after 10 s).

janus_start() {
    local dir=$1 http=$2 cpus=$3 mount id video audio mounts="" libs
    shift 3
    JANUS_IP=$(ip -4 -o addr show scope global 2>/dev/null | awk '{ sub("/.*", "", $4); print $4; exit }')
    if [[ -z $JANUS_IP ]]; then
        echo "janus: no global IPv4 address on this machine to gather ICE candidates on" >&2
        return 1
    fi
    mkdir -p "$dir/janus"
    for mount in "$@"; do
        IFS=: read -r id video audio <<<"$mount"
        mounts+="m$id: { type = \"rtp\" id = $id description = \"m$id\" media = (
  { type = \"video\" mid = \"v\" port = $video pt = 96 codec = \"h264\"
    fmtp = \"profile-level-id=42e01f;packetization-mode=1\" },
  { type = \"audio\" mid = \"a\" port = $audio pt = 111 codec = \"opus\" }) }
"
    done
    printf 'general: {\n}\n%s' "$mounts" >"$dir/janus/janus.plugin.streaming.jcfg"
    cat >"$dir/janus/janus.transport.http.jcfg" <<EOF
general: { json = "plain" base_path = "/janus" http = true port = $http interface = "lo" https = false }
admin: { admin_http = false }
EOF
    libs=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)/janus
    cat >"$dir/janus/janus.jcfg" <<EOF
general: { configs_folder = "$dir/janus" plugins_folder = "$libs/plugins" transports_folder = "$libs/transports"
           events_folder = "$libs/events" loggers_folder = "$libs/loggers" debug_level = 3
           session_timeout = 120 event_loops = 1 }
media: { rtp_port_range = "30000-59999" }
nat: { ice_enforce_list = "$JANUS_IP" }
plugins: { disable = "libjanus_audiobridge.so,libjanus_duktape.so,libjanus_echotest.so,libjanus_lua.so,libjanus_nosip.so,libjanus_recordplay.so,libjanus_sip.so,libjanus_textroom.so,libjanus_videocall.so,libjanus_videoroom.so,libjanus_voicemail.so" }
transports: { disable = "libjanus_mqtt.so,libjanus_nanomsg.so,libjanus_pfunix.so,libjanus_rabbitmq.so,libjanus_websockets.so" }
events: { broadcast = false }
EOF
    taskset -c "$cpus" janus -C "$dir/janus/janus.jcfg" -F "$dir/janus" -o >"$dir/janus.log" 2>&1 &
    JANUS_PID=$!
    for _ in $(seq 100); do
        curl -sf -o /dev/null "http://127.0.0.1:$http/janus/info" && return 0
        kill -0 "$JANUS_PID" 2>/dev/null || break
        sleep 0.1
    done
    echo "janus not ready: $(tail -n 3 "$dir/janus.log")" >&2
    kill "$JANUS_PID" 2>/dev/null
    return 1
}
