#!/usr/bin/env bash
# Installs the tools the tests drive (Debian packages), then checks formatting and lints
# and runs every test of the workspace. `.ci/run` runs exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

# Real clients the end-to-end tests use; a test whose tool is missing fails and names it.
# g++ builds libFuzzer for the fuzz run at the end; libsrt-openssl-dev and librist-dev are
# the SRT and RIST libraries strom links (the ingest worker), srt-tools has
# srt-live-transmit and rist-tools ristsender/ristreceiver; prometheus scrapes /metrics in
# tests/tests/metrics.rs; icecast2 is the Icecast server tests/tests/icecast_push.rs pushes to.
# The Debian package test (tests/tests/debian_package.rs) builds the .deb with dpkg-dev
# (dpkg-shlibdeps), checks it with lintian and systemd-analyze (systemd) and installs it
# (its postinst needs adduser).
# haproxy is the load balancer of the scale-out reference deployment (packaging/haproxy/)
# that tests/tests/scale_out.rs runs in front of two edges.
# vlc-bin (cvlc) and vlc-plugin-base play strom's RTSP output in tests/tests/rtsp_vlc.rs.
# gst-launch-1.0 with hlsdemux/dashdemux (plugins-bad), souphttpsrc (plugins-good) and
# avdec_h264 (libav) is GStreamer's cell of the player matrix (tests/tests/player_matrix.rs)
# and plays strom's live DASH on in tests/tests/players_dash.rs.
# iproute2 has `ss`, which the RTMP fan-out benchmark counts the server's TCP segments with.
# cmake builds the libopus that the opus crate bundles (the webrtc worker's Opus).
# nghttp2-client (h2load) and python3-h2 are the HTTP/2 benchmark's load generators
# (bench/http2/run.sh).
# protobuf-compiler (protoc, with libprotobuf-dev's well-known .proto files, only recommended by it) builds the etcd client's gRPC code (the cluster registry);
# etcd-server runs the 3-member etcd that tests/tests/cluster.rs starts on loopback ports.
packages=(protobuf-compiler libprotobuf-dev etcd-server cmake curl ffmpeg rtmpdump nginx libnginx-mod-rtmp procps util-linux openssl chromium g++ libsrt-openssl-dev srt-tools librist-dev rist-tools pkg-config python3-venv prometheus icecast2 dpkg-dev lintian systemd adduser haproxy vlc-bin vlc-plugin-base iproute2 gstreamer1.0-tools gstreamer1.0-plugins-base gstreamer1.0-plugins-good gstreamer1.0-plugins-bad gstreamer1.0-libav nghttp2-client python3-h2)
missing=()
# Node.js for the browser test (tests/browser): the machine's own, else Debian's. A Node.js
# that bundles npm conflicts with Debian's npm package, so npm is asked for only when absent.
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ "${#missing[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi

# hls.js, dash.js and playwright-core for the browser tests, exactly as package-lock.json pins them;
# installed again only when the lock file changed since the last install.
if ! cmp -s tests/browser/package-lock.json tests/browser/node_modules/.installed-lock.json; then
  npm ci --prefix tests/browser --no-audit --no-fund
  cp tests/browser/package-lock.json tests/browser/node_modules/.installed-lock.json
fi

# From PyPI, pinned, in a venv under target/ (created once): threefive, an independent
# SCTE-35 decoder the SCTE-35 test checks strom's sections with, and schemathesis, which
# runs the OpenAPI contract test. Debian's python3 (a pyenv one earlier on PATH may lack
# ensurepip).
if ! target/pytools/bin/python3 -c 'import threefive, schemathesis' 2>/dev/null; then
  rm -rf target/pytools
  "$(command -v /usr/bin/python3 || command -v python3)" -m venv target/pytools
  target/pytools/bin/pip install --quiet --disable-pip-version-check \
    threefive==3.1.5 schemathesis==4.32.5
fi

# A one-shot build gains nothing from incremental state, which is a third of target/debug.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"

cargo fmt --all -- --check
# The packager decides what to package from the delivery settings only, never from the
# RTMP listener settings, and reads neutral frames from its hub, never FLV (stream core).
if grep -rnE '\b(RtmpSettings|RtmpInterface|RtmpLimits|OutputProtocol|AppSettings)\b|\.rtmp\b' workers/http/src; then
  echo "workers/http reads RTMP listener settings; use rules.delivery" >&2
  exit 1
fi
if grep -rniE 'flv' workers/http/src; then
  echo "workers/http parses FLV; it must read neutral frames (strom_stream)" >&2
  exit 1
fi
# Who may publish and who may play is decided by the gate (workers/stream/src/gate), the
# stream core's front door, never by a protocol's own copy of the checks.
if grep -rnE 'rtmp\s*\.\s*apps\b|check_playback|protection_for\(' workers --include='*.rs' \
  | grep -vE '^workers/(stream/src/gate/|runtime/src/play_signature\.rs)'; then
  echo "publisher or playback checks outside the gate; use strom_stream::Gate" >&2
  exit 1
fi
# A client's publisher and reader get their handles from the gate after admission
# (Gate::publish, Gate::read). Hub::own_publisher and Hub::own_reader are for what the
# operator configured, which no client asked for; a new caller joins this list with its
# reason (docs/design.md, the gate).
own_callers='^workers/(stream/|dvr/src/recording\.rs|http/src/(icecast|icecast_push|packaging)\.rs|mpegts/src/(ts_input\.rs|outputs/(rist_out|srt_out|udp_out)\.rs|playout/)|rtmp/src/(pull/|republish/)|rtsp/src/pull/|webrtc/src/feed\.rs|transcode/src/job\.rs)'
if grep -rnE '\.own_(reader|publisher)\(' workers --include='*.rs' | grep -vE "$own_callers" \
  | grep -vE '^[^:]*(_tests\.rs|/tests/[^:]*):'; then
  echo "a client path takes a stream handle without the gate; use Gate::publish or Gate::read" >&2
  exit 1
fi
cargo clippy --workspace --all-targets --locked -- -D warnings
cargo build --workspace --all-targets --locked
# The Debian package, built once here so that its test (which installs it) does not compile
# while the other end-to-end tests run. It packages the debug binary the build above made:
# the test checks the packaging (lintian, install, the unit, purge), and a release compile
# of the whole tree would add about 13 minutes to a run on the 2-core CI machine.
STROM_DEB=$(realpath "$(STROM_DEB_PROFILE=dev STROM_DEB_SKIP_BUILD=1 bash scripts/build-deb.sh | tail -n 1)")
export STROM_DEB
if cargo nextest --version >/dev/null 2>&1; then
  cargo nextest run --workspace --locked --no-fail-fast
else
  cargo test --workspace --locked --no-fail-fast
fi

# Every fuzz target for a bounded time on stable Rust (rtmp_server_input 60 s, the others
# 10 s each); a crash fails the run and prints the input (see fuzz/README.md).
bash scripts/fuzz-ci.sh
