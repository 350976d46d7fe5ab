#!/usr/bin/env bash
# Builds the fuzz targets (fuzz/) on stable Rust and runs each for a bounded time:
# `rtmp_server_input` (everything a client sends to the RTMP server) for FUZZ_SECONDS
# (default 60), the other targets for FUZZ_OTHER_SECONDS each (default 10; 0 skips them),
# FUZZ_JOBS of them at a time (default 2, the CI machine's cores). Each starts from the
# committed seeds in fuzz/corpus/<target> where there are some.
#
# No nightly and no cargo-fuzz needed: the targets are built the way
# `cargo fuzz build --sanitizer none` builds them (coverage instrumentation through
# RUSTFLAGS, for the host target only so that build scripts and proc macros are left
# alone). libFuzzer itself is compiled by libfuzzer-sys: a C++ compiler is required
# (Debian package g++).
#
# Exits non-zero when a target crashes (panics, overflows, runs out of memory or time),
# printing the input that crashed it and the command that replays it.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

seconds="${FUZZ_SECONDS:-60}"
other_seconds="${FUZZ_OTHER_SECONDS:-10}"
host="$(rustc -vV | sed -n 's/^host: //p')"
work="target/fuzz-ci"

export RUSTFLAGS="-Cpasses=sancov-module \
-Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters \
-Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares \
--cfg fuzzing -Cdebug-assertions -Coverflow-checks"
export RUST_BACKTRACE=1

command -v c++ >/dev/null 2>&1 || {
  echo "fuzz-ci: no C++ compiler for libFuzzer: install the Debian package g++" >&2
  exit 2
}

started=$SECONDS
cargo build --release --locked --target "$host" --bins
echo "fuzz-ci: built in $((SECONDS - started)) s"

# run TARGET SECONDS [SEED_DIR]: new inputs go to a scratch corpus (the committed seeds
# are only read), crashes to $work/artifacts/TARGET/. Returns non-zero on a crash, after
# printing the input and how to replay it.
run() {
  local target="$1" limit="$2" seeds="${3:-}"
  local corpus="$work/corpus/$target" artifacts="$work/artifacts/$target"
  rm -rf "$artifacts"
  mkdir -p "$corpus" "$artifacts"
  local binary="target/$host/release/$target"
  echo "fuzz-ci: $target for ${limit} s${seeds:+ from $seeds}"
  local status=0
  # shellcheck disable=SC2086 # $seeds is empty or one directory
  "$binary" "$corpus" $seeds \
    -max_total_time="$limit" -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$artifacts/" -print_final_stats=1 \
    >"$work/$target.log" 2>&1 || status=$?
  if [ "$status" -ne 0 ]; then
    tail -n 60 "$work/$target.log" >&2
    echo "fuzz-ci: $target FAILED (exit $status); crashing input(s):" >&2
    local found=0
    for input in "$artifacts"/*; do
      [ -e "$input" ] || continue
      found=1
      echo "  $PWD/$input" >&2
      echo "  replay: (cd fuzz && $binary $input)" >&2
    done
    [ "$found" -eq 1 ] || echo "  (none written; see $PWD/$work/$target.log)" >&2
    return 1
  fi
  grep -E '^stat::(number_of_executed_units|new_units_added|peak_rss_mb)' "$work/$target.log" | sed 's/^/  /'
}

# Runs the targets $parallel at a time; each one's report is printed when all are done, in
# order, and a crash in any fails the script.
parallel="${FUZZ_JOBS:-2}"
targets=(rtmp_server_input)
if [ "$other_seconds" -gt 0 ]; then
  targets+=(flv_tags codec_configs control_frames bus_headers ts_demux scte35 icecast_source id3
    rtmp_handshake client_replies signatures http_range_and_paths http2_frames config_files hls_index
    muxing dvr_archive mp4_files rtsp_requests webrtc_input)
fi
for target in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$parallel" ]; do
    wait -n || true
  done
  limit="$other_seconds"
  [ "$target" = rtmp_server_input ] && limit="$seconds"
  seeds=""
  [ -d "corpus/$target" ] && seeds="corpus/$target"
  rm -f "$work/$target.status"
  mkdir -p "$work"
  (
    status=0
    run "$target" "$limit" "$seeds" || status=$?
    echo "$status" >"$work/$target.status"
  ) >"$work/$target.report" 2>&1 &
done
wait
failed=()
for target in "${targets[@]}"; do
  if [ "$(cat "$work/$target.status" 2>/dev/null)" = 0 ]; then
    cat "$work/$target.report"
  else
    cat "$work/$target.report" >&2
    failed+=("$target")
  fi
done
if [ "${#failed[@]}" -gt 0 ]; then
  echo "fuzz-ci: crashes in ${failed[*]} ($((SECONDS - started)) s in all)" >&2
  exit 1
fi
echo "fuzz-ci: no crashes ($((SECONDS - started)) s in all)"
