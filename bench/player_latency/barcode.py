#!/usr/bin/env python3
"""Frame-index barcodes of bench/player_latency: reading them and turning them into latency.

The publisher (run.sh) burns its frame index N into the top 32 rows of every picture:
16 bars, most significant bit first, rows 0-15 white (luma 235) for a 1 bit and black (16)
for a 0, rows 16-31 the complement; a frame decodes only when every bar and its complement
disagree, so a half-decoded or blended frame is dropped rather than misread.

  barcode.py clock WIDTH SENDLOG      stdin: raw GRAY8 32-row bands straight from the
                                      publisher's filter graph; appends "N wall-time" to
                                      SENDLOG as each frame leaves it (its send time)
  barcode.py read WIDTH HEIGHT SKIP OUT stdin: raw frames a player writes as it shows them
                                      (GRAY8, or I420 with SKIP = chroma bytes per frame;
                                      SKIP -1: YUV4MPEG2 4:2:0, its own size);
                                      appends "wall-time N" to OUT per frame
  barcode.py stats SENDLOG SAMPLES SETTLE WINDOW
                                      latency = shown time - send time of the frame shown,
                                      over WINDOW s starting SETTLE s after the first
                                      frame shown; prints one JSON line
  barcode.py wait SETTLE WINDOW TIMEOUT SAMPLES...
                                      returns once every SAMPLES file spans SETTLE+WINDOW s
                                      from its first frame, or after TIMEOUT s

Standard library only.
"""

import json
import sys
import time

BITS = 16
BAND = 32


def decode(rows, width):
    """N from a GRAY8 picture's first BAND rows (bytes, row-major, `width` per row), or None."""
    top = 8 * width
    bottom = 24 * width
    n = 0
    for i in range(BITS):
        x = (2 * i + 1) * width // (2 * BITS)
        bit = rows[top + x] > 125
        if bit == (rows[bottom + x] > 125):
            return None
        n = (n << 1) | bit
    return n


def read_exact(stream, size):
    buf = bytearray()
    while len(buf) < size:
        chunk = stream.read(size - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def clock(width, sendlog):
    stdin = sys.stdin.buffer
    with open(sendlog, "a", buffering=1) as out:
        while (band := read_exact(stdin, width * BAND)) is not None:
            n = decode(band, width)
            if n is not None:
                out.write(f"{n} {time.time():.4f}\n")


def read(width, height, skip, path):
    stdin = sys.stdin.buffer
    y4m = skip < 0
    if y4m:
        # "YUV4MPEG2 W320 H240 ...\n", then "FRAME\n" before each frame.
        header = stdin.readline().split()
        size = {field[:1]: field[1:] for field in header[1:]}
        width, height = int(size[b"W"]), int(size[b"H"])
        skip = width * height // 2
    with open(path, "a", buffering=1) as out:
        while not (y4m and not stdin.readline()) and (
            frame := read_exact(stdin, width * height + skip)
        ) is not None:
            n = decode(frame, width)
            if n is not None:
                out.write(f"{time.time():.4f} {n}\n")


def quantile(values, q):
    return round(values[min(len(values) - 1, int(q * len(values)))], 3) if values else None


def stats(sendlog, samples, settle, window):
    sent = {}
    with open(sendlog) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 2:
                sent.setdefault(int(parts[0]), float(parts[1]))
    shown = []
    try:
        with open(samples) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2:
                    shown.append((float(parts[0]), int(parts[1])))
    except FileNotFoundError:
        pass
    result = {"latency_p50": None, "latency_p95": None, "samples": 0}
    if not shown:
        print(json.dumps(result))
        return
    start = shown[0][0] + settle
    end = start + window
    window_shown = [(t, n) for t, n in shown if start <= t < end]
    latency = sorted(t - sent[n] for t, n in window_shown if n in sent)
    # A freeze: the picture stayed on one frame for more than 0.5 s of wall time (the
    # time between the first showing of a frame and the first showing of the next).
    changes = []
    for t, n in window_shown:
        if not changes or n != changes[-1][1]:
            changes.append((t, n))
    gaps = [b[0] - a[0] for a, b in zip(changes, changes[1:])]
    span = (window_shown[-1][0] - window_shown[0][0]) if window_shown else 0
    frames = (changes[-1][1] - changes[0][1]) if changes else 0
    result.update(
        latency_p50=quantile(latency, 0.5),
        latency_p95=quantile(latency, 0.95),
        latency_min=quantile(latency, 0.0),
        samples=len(latency),
        freezes=sum(1 for g in gaps if g > 0.5),
        longest_freeze=round(max(gaps), 3) if gaps else None,
        # Frames advanced per wall second in the window: 30 at real time; below while
        # stalled, above while catching up.
        fps=round(frames / span, 1) if span > 0 else None,
    )
    print(json.dumps(result))


def span(path):
    try:
        with open(path) as f:
            lines = f.read().split("\n")
    except FileNotFoundError:
        return 0.0
    lines = [line for line in lines if line.count(" ") == 1]
    return float(lines[-1].split()[0]) - float(lines[0].split()[0]) if lines else 0.0


def wait(settle, window, timeout, paths):
    end = time.time() + timeout
    while time.time() < end and any(span(p) < settle + window for p in paths):
        time.sleep(0.5)


def main(argv):
    if argv[1:2] == ["clock"]:
        clock(int(argv[2]), argv[3])
    elif argv[1:2] == ["read"]:
        read(int(argv[2]), int(argv[3]), int(argv[4]), argv[5])
    elif argv[1:2] == ["stats"]:
        stats(argv[2], argv[3], float(argv[4]), float(argv[5]))
    elif argv[1:2] == ["wait"]:
        wait(float(argv[2]), float(argv[3]), float(argv[4]), argv[5:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    try:
        main(sys.argv)
    except (BrokenPipeError, KeyboardInterrupt):
        pass
