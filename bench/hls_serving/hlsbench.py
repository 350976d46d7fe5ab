#!/usr/bin/env python3
"""Helpers of bench/hls_serving/run.sh (standard library only).

  hlsbench.py tap LISTEN_PORT TARGET_PORT KEYLOG
      A TCP proxy on 127.0.0.1:LISTEN_PORT to 127.0.0.1:TARGET_PORT for an RTMP
      publisher. It parses the client-to-server RTMP chunk stream and appends one line
      "<wall ms> <rtmp timestamp ms>" to KEYLOG for every H.264/HEVC/AV1 keyframe
      message (not sequence headers), at the moment the message's last byte arrived
      (just before it is forwarded).

  hlsbench.py latency URL COUNT KEYLOG [--interval-ms 10] [--timeout 120]
      Polls the media playlist URL over one keep-alive connection, records when each
      segment appears that was not listed at the first poll, and stops after COUNT of
      them. Each is matched with the newest keyframe in KEYLOG that arrived before the
      segment appeared (the keyframe that ended it, as long as the latency stays below
      the keyframe interval). Prints one JSON object: per segment the latency and, when
      the playlist carries #EXT-X-PROGRAM-DATE-TIME, the server's own cut time
      (PROGRAM-DATE-TIME + EXTINF) split into "keyframe -> cut" and "cut -> listed".
"""

import calendar
import http.client
import json
import socket
import sys
import threading
import time
import urllib.parse

HANDSHAKE = 1 + 1536 + 1536  # C0 + C1 + C2 from the client


def now_ms():
    return time.time() * 1000.0


class RtmpKeyframes:
    """Incremental parser of an RTMP client's chunk stream (publisher side)."""

    def __init__(self, log):
        self.log = log
        self.buf = bytearray()
        self.skip = HANDSHAKE
        self.chunk_size = 128
        self.streams = {}  # csid -> state

    def feed(self, data):
        if self.skip:
            n = min(self.skip, len(data))
            self.skip -= n
            data = data[n:]
        self.buf += data
        pos = 0
        buf = self.buf
        while True:
            used = self.chunk(buf, pos)
            if used == 0:
                break
            pos += used
        del buf[:pos]

    def chunk(self, buf, i):
        """Parses one chunk at buf[i:]; returns the bytes used, 0 when incomplete."""
        avail = len(buf) - i
        if avail < 1:
            return 0
        fmt, csid, h = buf[i] >> 6, buf[i] & 0x3F, 1
        if csid == 0:
            if avail < 2:
                return 0
            csid, h = 64 + buf[i + 1], 2
        elif csid == 1:
            if avail < 3:
                return 0
            csid, h = 64 + buf[i + 1] + 256 * buf[i + 2], 3
        st = self.streams.setdefault(
            csid, {"ts": 0, "delta": 0, "len": 0, "type": 0, "left": 0, "ext": False, "head": b""}
        )
        mh = (11, 7, 3, 0)[fmt]
        if avail < h + mh:
            return 0
        m = buf[i + h : i + h + mh]
        field = int.from_bytes(m[0:3], "big") if fmt < 3 else None
        ext = (field == 0xFFFFFF) if fmt < 3 else st["ext"]
        e = 4 if ext else 0
        if avail < h + mh + e:
            return 0
        if ext:
            field = int.from_bytes(buf[i + h + mh : i + h + mh + 4], "big")
        length, mtype = st["len"], st["type"]
        if fmt <= 1:
            length, mtype = int.from_bytes(m[3:6], "big"), m[6]
        starts = st["left"] == 0
        n = min(self.chunk_size, length if starts else st["left"])
        if avail < h + mh + e + n:
            return 0
        # Complete chunk: commit the header state.
        st["ext"] = ext
        if fmt <= 1:
            st["len"], st["type"] = length, mtype
        if starts:
            if fmt == 0:
                st["ts"], st["delta"] = field, field
            elif fmt in (1, 2):
                st["ts"], st["delta"] = st["ts"] + field, field
            else:
                st["ts"] += st["delta"]
            st["left"] = length
            st["head"] = b""
        p = i + h + mh + e
        payload = buf[p : p + n]
        if len(st["head"]) < 5:
            st["head"] = (bytes(st["head"]) + bytes(payload))[:5]
        st["left"] -= n
        if st["left"] == 0:
            self.message(st["type"], st["ts"], st["head"])
        return h + mh + e + n

    def message(self, mtype, ts, head):
        if mtype == 1 and len(head) >= 4:  # Set Chunk Size
            self.chunk_size = int.from_bytes(head[:4], "big") & 0x7FFFFFFF
        elif mtype == 9 and len(head) >= 2:
            frame_type = (head[0] >> 4) & 0x7
            if head[0] & 0x80:  # Enhanced RTMP: packet type in the low nibble
                keyframe = frame_type == 1 and (head[0] & 0x0F) in (1, 3)
            else:  # legacy: codec id 7 (AVC) or 12; AVCPacketType 1 = NALUs
                keyframe = frame_type == 1 and not ((head[0] & 0x0F) in (7, 12) and head[1] == 0)
            if keyframe:
                self.log.write(f"{now_ms():.1f} {ts}\n")
                self.log.flush()


def pipe(src, dst, parser=None):
    try:
        while True:
            data = src.recv(262144)
            if not data:
                break
            if parser is not None:
                parser.feed(data)  # timestamps a keyframe before it is forwarded
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def tap(listen_port, target_port, keylog):
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", int(listen_port)))
    server.listen(16)
    log = open(keylog, "a", buffering=1)
    while True:
        client, _ = server.accept()
        try:
            upstream = socket.create_connection(("127.0.0.1", int(target_port)))
        except OSError:
            client.close()
            continue
        for s in (client, upstream):
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        parser = RtmpKeyframes(log)
        threading.Thread(target=pipe, args=(client, upstream, parser), daemon=True).start()
        threading.Thread(target=pipe, args=(upstream, client), daemon=True).start()


def parse_pdt(value):
    """2026-11-21T05:40:00.123Z (also +00:00) -> unix ms."""
    value = value.strip().replace("+00:00", "Z")
    main, _, frac = value.rstrip("Z").partition(".")
    secs = calendar.timegm(time.strptime(main, "%Y-%m-%dT%H:%M:%S"))
    return secs * 1000.0 + (float("0." + frac) * 1000.0 if frac else 0.0)


def parse_playlist(text):
    """[(uri, pdt_ms or None, extinf_secs)]"""
    out, pdt, extinf = [], None, 0.0
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("#EXT-X-PROGRAM-DATE-TIME:"):
            pdt = parse_pdt(line.split(":", 1)[1])
        elif line.startswith("#EXTINF:"):
            extinf = float(line.split(":", 1)[1].split(",")[0])
        elif line and not line.startswith("#"):
            out.append((line, pdt, extinf))
            pdt, extinf = None, 0.0
    return out


def percentile(values, p):
    """Nearest rank."""
    if not values:
        return None
    v = sorted(values)
    k = max(1, -(-len(v) * p // 100))
    return round(v[int(k) - 1], 1)


def latency(url, count, keylog, interval_ms=10.0, timeout=120.0):
    u = urllib.parse.urlsplit(url)
    path = u.path + ("?" + u.query if u.query else "")
    conn = None
    seen, new = None, []
    polls, deadline = 0, time.time() + timeout
    while len(new) < count and time.time() < deadline:
        try:
            if conn is None:
                conn = http.client.HTTPConnection(u.hostname, u.port, timeout=5)
            conn.request("GET", path)
            resp = conn.getresponse()
            body = resp.read().decode("utf-8", "replace")
            at = now_ms()
            polls += 1
        except (OSError, http.client.HTTPException):
            conn = None
            time.sleep(interval_ms / 1000.0)
            continue
        if resp.status == 200:
            entries = parse_playlist(body)
            if seen is None:
                seen = {e[0] for e in entries}
            else:
                for uri, pdt, extinf in entries:
                    if uri not in seen:
                        seen.add(uri)
                        new.append({"uri": uri, "appeared_ms": at, "pdt_ms": pdt, "extinf": extinf})
        time.sleep(interval_ms / 1000.0)
    keys = []
    with open(keylog) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                keys.append((float(parts[0]), int(parts[1])))
    keys.sort()
    rows = []
    for seg in new[:count]:
        before = [k for k in keys if k[0] <= seg["appeared_ms"]]
        row = {"uri": seg["uri"], "extinf": seg["extinf"]}
        if before:
            key_ms, key_ts = before[-1]
            row["keyframe_rtmp_ts"] = key_ts
            row["latency_ms"] = round(seg["appeared_ms"] - key_ms, 1)
            if seg["pdt_ms"] is not None:
                cut = seg["pdt_ms"] + seg["extinf"] * 1000.0
                row["key_to_cut_ms"] = round(cut - key_ms, 1)
                row["cut_to_listed_ms"] = round(seg["appeared_ms"] - cut, 1)
        rows.append(row)
    lat = [r["latency_ms"] for r in rows if "latency_ms" in r]
    cut = [r["cut_to_listed_ms"] for r in rows if "cut_to_listed_ms" in r]
    k2c = [r["key_to_cut_ms"] for r in rows if "key_to_cut_ms" in r]
    intervals = [b[0] - a[0] for a, b in zip(keys, keys[1:])]
    result = {
        "segments": len(lat),
        "wanted": count,
        "polls": polls,
        "interval_ms": interval_ms,
        "keyframe_interval_ms_p50": percentile(intervals, 50),
        "latency_ms": {"min": percentile(lat, 0.0001), "p50": percentile(lat, 50),
                       "p95": percentile(lat, 95), "max": percentile(lat, 100)},
        "cut_to_listed_ms": {"p50": percentile(cut, 50), "p95": percentile(cut, 95)} if cut else None,
        "key_to_cut_ms": {"p50": percentile(k2c, 50), "p95": percentile(k2c, 95)} if k2c else None,
        "rows": rows,
    }
    print(json.dumps(result))


def main(argv):
    if len(argv) >= 4 and argv[0] == "tap":
        tap(argv[1], argv[2], argv[3])
    elif len(argv) >= 4 and argv[0] == "latency":
        opts = {"--interval-ms": 10.0, "--timeout": 120.0}
        rest = argv[4:]
        while rest:
            opts[rest[0]] = float(rest[1])
            rest = rest[2:]
        latency(argv[1], int(argv[2]), argv[3], opts["--interval-ms"], opts["--timeout"])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
