#!/usr/bin/env python3
"""Helpers of bench/ts_out/run.sh (standard library only).

  tsbench.py fanout LISTEN_PORT PORTS COUNTER
      Receives UDP datagrams (MPEG-TS, 7 packets each) on 127.0.0.1:LISTEN_PORT and sends
      a copy of each to 127.0.0.1:p for every p in the comma-separated PORTS (the feed of
      the srt-live-transmit listeners). Every 100 ms it replaces COUNTER with
      "<bytes received> <wall ms>".

  tsbench.py srtrate FROM_MS TO_MS CSV...
      Each CSV is the -statsout file of one srt-live-transmit caller (-s:N -f -pf:csv):
      cumulative counters with a wall-clock Timepoint per line. For each file, the payload
      bytes received (byteRecv - 44 * pktRecv: libsrt counts the 16-byte SRT and 28-byte
      UDP/IP headers) between the lines nearest to FROM_MS and TO_MS, as Mbit/s over the
      time between those lines; prints one JSON object with the per-caller figures.

  tsbench.py sessions BEFORE_JSON AFTER_JSON TYPE SECONDS
      Two /manage/sessions answers; for the sessions of TYPE present in both, bytes_sent
      after - before, as Mbit/s over SECONDS; prints one JSON object.

  tsbench.py curlrate FILE...
      Each FILE holds curl's -w '%{http_code} %{size_download} %{time_total}' of one
      viewer; prints one JSON object (codes, per-viewer Mbit/s over its whole life, of the
      viewers answered 200; "receiving": those of them that got bytes).
"""

import datetime
import json
import os
import socket
import sys
import time


def now_ms():
    return time.time() * 1000.0


def stats(values):
    v = sorted(values)
    if not v:
        return {"n": 0, "min": 0.0, "median": 0.0, "max": 0.0, "sum": 0.0}
    return {"n": len(v), "min": round(v[0], 3), "median": round(v[len(v) // 2], 3),
            "max": round(v[-1], 3), "sum": round(sum(v), 3)}


def fanout(listen_port, ports, counter_path):
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for opt in (getattr(socket, "SO_RCVBUFFORCE", None), socket.SO_RCVBUF):
        if opt is None:
            continue
        try:
            sock.setsockopt(socket.SOL_SOCKET, opt, 8 << 20)
            break
        except OSError:
            pass
    sock.bind(("127.0.0.1", int(listen_port)))
    sock.settimeout(0.1)
    out = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    dests = [("127.0.0.1", int(p)) for p in ports.split(",") if p]
    total, last = 0, 0.0
    while True:
        try:
            data = sock.recv(65536)
            total += len(data)
            for d in dests:
                try:
                    out.sendto(data, d)
                except OSError:  # a listener not up yet
                    pass
        except socket.timeout:
            pass
        t = now_ms()
        if t - last >= 100.0:
            last = t
            tmp = counter_path + ".tmp"
            with open(tmp, "w") as f:
                f.write(f"{total} {t:.1f}\n")
            os.replace(tmp, counter_path)


def read_csv(path):
    """[(wall ms, payload bytes, lost, dropped)] of one srt-live-transmit stats file."""
    rows, cols = [], None
    try:
        f = open(path)
    except OSError:
        return rows
    with f:
        for line in f:
            parts = line.strip().split(",")
            if parts[0] == "Timepoint":
                cols = {}
                for i, name in enumerate(parts):
                    cols.setdefault(name, i)
                continue
            if cols is None or len(parts) < len(cols):
                continue
            try:
                ts = datetime.datetime.strptime(parts[0].replace("+0000", "+00:00"), "%Y-%m-%dT%H:%M:%S.%f%z")
                b, p = int(parts[cols["byteRecv"]]), int(parts[cols["pktRecv"]])
                lost, drop = int(parts[cols["pktRcvLoss"]]), int(parts[cols["pktRcvDrop"]])
            except (ValueError, KeyError, IndexError):
                continue
            rows.append((ts.timestamp() * 1000.0, b - 44 * p, lost, drop))
    return rows


def nearest(rows, t):
    return min(rows, key=lambda r: abs(r[0] - t))


def srtrate(from_ms, to_ms, paths):
    from_ms, to_ms = float(from_ms), float(to_ms)
    rates, lost, dropped, silent, offsets = [], 0, 0, [], []
    for path in paths:
        rows = read_csv(path)
        if not rows:
            silent.append(os.path.basename(path))
            rates.append(0.0)
            continue
        a, b = nearest(rows, from_ms), nearest(rows, to_ms)
        offsets.append(max(abs(a[0] - from_ms), abs(b[0] - to_ms)))
        if b[0] - a[0] < 1000.0 or b[1] <= a[1]:
            silent.append(os.path.basename(path))
            rates.append(0.0)
            continue
        rates.append((b[1] - a[1]) * 8 / 1000.0 / (b[0] - a[0]))
        lost += b[2] - a[2]
        dropped += b[3] - a[3]
    out = {"callers": len(paths), "receiving": sum(1 for r in rates if r > 0.0), "silent": silent,
           "mbps": stats(rates), "lost_pkts": lost, "dropped_pkts": dropped,
           "max_line_offset_ms": round(max(offsets), 1) if offsets else None}
    print(json.dumps(out))


def sessions(before, after, typ, seconds):
    def load(p):
        try:
            v = json.load(open(p))
        except (OSError, ValueError):
            return {}
        if isinstance(v, dict):
            v = v.get("data", v.get("sessions", []))
        return {s["id"]: s for s in v if isinstance(s, dict) and s.get("type") == typ}
    a, b = load(before), load(after)
    secs = float(seconds)
    rates = [(b[i].get("bytes_sent", 0) - a[i].get("bytes_sent", 0)) * 8 / 1e6 / secs for i in b if i in a]
    print(json.dumps({"sessions_before": len(a), "sessions_after": len(b), "both": len(rates),
                      "mbps": stats(rates)}))


def curlrate(paths):
    codes, rates, ok = {}, [], 0
    for p in paths:
        try:
            code, size, secs = open(p).read().split()[:3]
        except (OSError, ValueError):
            code, size, secs = "none", "0", "0"
        codes[code] = codes.get(code, 0) + 1
        if code != "200":
            continue
        rates.append(int(size) * 8 / 1e6 / float(secs) if float(secs) > 0 else 0.0)
    print(json.dumps({"viewers": len(paths), "codes": codes, "receiving": sum(1 for r in rates if r > 0.0),
                      "mbps": stats(rates)}))


def main(argv):
    if len(argv) == 4 and argv[0] == "fanout":
        fanout(argv[1], argv[2], argv[3])
    elif len(argv) >= 3 and argv[0] == "srtrate":
        srtrate(argv[1], argv[2], argv[3:])
    elif len(argv) == 5 and argv[0] == "sessions":
        sessions(argv[1], argv[2], argv[3], argv[4])
    elif len(argv) >= 2 and argv[0] == "curlrate":
        curlrate(argv[1:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
