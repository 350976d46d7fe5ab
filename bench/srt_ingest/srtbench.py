#!/usr/bin/env python3
"""Helpers of bench/srt_ingest/run.sh (standard library only).

  srtbench.py tap LISTEN_PORT TARGET_PORT KEYLOG COUNTER
      A UDP relay for MPEG-TS datagrams from 127.0.0.1:LISTEN_PORT to
      127.0.0.1:TARGET_PORT. Appends "<wall ms> <video PTS ms>" to KEYLOG for every
      video keyframe (a TS packet starting a PES of stream id 0xE0-0xEF whose adaptation
      field has random_access_indicator set), just before the datagram is forwarded.
      Every 100 ms it replaces COUNTER with "<bytes forwarded> <wall ms>".

  srtbench.py sink LISTEN_PORT KEYLOG COUNTER
      Receives MPEG-TS datagrams on 127.0.0.1:LISTEN_PORT and drops them; KEYLOG and
      COUNTER as for tap (the bytes received).

  srtbench.py transit TAP_KEYLOG SINK_KEYLOG FROM_MS
      Matches the keyframes of both logs by PTS (those the tap saw at or after FROM_MS)
      and prints one JSON object with the count and min/p50/p95/max of sink - tap in ms.
"""

import json
import os
import socket
import sys
import time

# Shared with the HLS serving benchmark (its latency poller is used by run.sh too).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "hls_serving"))
from hlsbench import percentile  # noqa: E402


def now_ms():
    return time.time() * 1000.0


def keyframes(data):
    """PTS (ms) of the video keyframes starting in this datagram of TS packets."""
    out = []
    for off in range(0, len(data) - 187, 188):
        if data[off] != 0x47 or not data[off + 1] & 0x40:  # sync byte, payload_unit_start
            continue
        afc = (data[off + 3] >> 4) & 3
        if afc != 3:  # adaptation field and payload both present
            continue
        aflen = data[off + 4]
        if aflen == 0 or not data[off + 5] & 0x40:  # random_access_indicator
            continue
        p = off + 5 + aflen
        if p + 14 > off + 188 or data[p : p + 3] != b"\x00\x00\x01" or not 0xE0 <= data[p + 3] <= 0xEF:
            continue
        pts = None
        if data[p + 7] & 0x80:
            b = data[p + 9 : p + 14]
            pts = ((b[0] >> 1) & 7) << 30 | b[1] << 22 | (b[2] >> 1) << 15 | b[3] << 7 | b[4] >> 1
        out.append(-1 if pts is None else pts // 90)
    return out


class Counter:
    def __init__(self, path):
        self.path, self.bytes, self.last = path, 0, 0.0

    def add(self, n):
        self.bytes += n
        self.maybe_write()

    def maybe_write(self):
        t = now_ms()
        if t - self.last >= 100.0:
            self.last = t
            tmp = self.path + ".tmp"
            with open(tmp, "w") as f:
                f.write(f"{self.bytes} {t:.1f}\n")
            os.replace(tmp, self.path)


def udp_socket(port):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for opt in (getattr(socket, "SO_RCVBUFFORCE", None), socket.SO_RCVBUF):
        if opt is None:
            continue
        try:
            s.setsockopt(socket.SOL_SOCKET, opt, 8 << 20)
            break
        except OSError:
            pass
    s.bind(("127.0.0.1", int(port)))
    s.settimeout(0.1)
    return s


def relay(listen_port, target_port, keylog, counter_path):
    sock = udp_socket(listen_port)
    out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM) if target_port else None
    dest = ("127.0.0.1", int(target_port)) if target_port else None
    log = open(keylog, "a", buffering=1)
    counter = Counter(counter_path)
    while True:
        try:
            data = sock.recv(65536)
        except socket.timeout:
            counter.maybe_write()
            continue
        for pts in keyframes(data):
            log.write(f"{now_ms():.1f} {pts}\n")
        if out is not None:
            try:
                out.sendto(data, dest)
            except OSError:  # nobody listening yet
                pass
        counter.add(len(data))


def read_keys(path):
    keys = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2 and parts[1] != "-1":
                keys.setdefault(int(parts[1]), float(parts[0]))
    return keys


def transit(tap_log, sink_log, from_ms):
    sent, got = read_keys(tap_log), read_keys(sink_log)
    d = [got[pts] - t for pts, t in sent.items() if t >= float(from_ms) and pts in got]
    print(json.dumps({"keyframes": len(d), "min": percentile(d, 0.0001), "p50": percentile(d, 50),
                      "p95": percentile(d, 95), "max": percentile(d, 100)}))


def main(argv):
    if len(argv) == 5 and argv[0] == "tap":
        relay(argv[1], argv[2], argv[3], argv[4])
    elif len(argv) == 4 and argv[0] == "sink":
        relay(argv[1], None, argv[2], argv[3])
    elif len(argv) == 4 and argv[0] == "transit":
        transit(argv[1], argv[2], argv[3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
