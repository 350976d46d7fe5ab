#!/usr/bin/env python3
"""The viewer and the report of bench/cluster/failover.sh (standard library only).

watch: plays URL with ffmpeg (`-vf showinfo -f null -`) and writes one line per decoded
    video frame to FRAMES, "<unix time> <frame number>", timestamped as the line arrives;
    ffmpeg's other lines go to FRAMES.log. Meanwhile every --poll-ms it reads
    /manage/cluster of each `--server NAME=MGMT_PORT` and writes to POLLS one JSON line
    {"t", "server", "holder" (of --stream, or null), "refused"}. Runs until SIGTERM.
report: from FRAMES, POLLS and the kill time: the viewer's gap (the longest interval
    between two frames from 2 s before the kill on; the frames before and after it), the
    kill to the edge's copy losing and regaining a holder, to B's claim, and to the first
    frame after the gap. Prints one JSON object.
"""

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request

SHOWINFO = re.compile(rb"Parsed_showinfo.*\bn:\s*(\d+)")


def watch(args):
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    viewer = subprocess.Popen(
        ["ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "info", "-i", args.url,
         "-map", "0:v:0", "-vf", "showinfo", "-f", "null", "-"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def read_frames():
        with open(args.frames, "w", buffering=1) as frames, \
                open(args.frames + ".log", "w", buffering=1) as log:
            pending = b""
            while True:
                chunk = viewer.stderr.read1(65536)
                if not chunk:
                    break
                now = time.time()
                pending += chunk
                *lines, pending = re.split(rb"[\r\n]", pending)
                for line in lines:
                    match = SHOWINFO.search(line)
                    if match:
                        frames.write(f"{now:.3f} {int(match.group(1))}\n")
                    elif line.strip():
                        log.write(f"{now:.3f} {line.decode(errors='replace')}\n")
            log.write(f"{time.time():.3f} viewer exited ({viewer.wait()})\n")

    reader = threading.Thread(target=read_frames, daemon=True)
    reader.start()
    app, stream = args.stream.split("/", 1)
    servers = [s.split("=", 1) for s in args.server]
    with open(args.polls, "w", buffering=1) as polls:
        while not stop.is_set():
            for name, port in servers:
                t = time.time()
                try:
                    with urllib.request.urlopen(
                            f"http://127.0.0.1:{port}/manage/cluster", timeout=2) as answer:
                        state = json.load(answer)
                except (OSError, ValueError):
                    polls.write(json.dumps({"t": t, "server": name, "error": True}) + "\n")
                    continue
                holder = next((s["server"] for s in state.get("streams", [])
                               if s["app"] == app and s["stream"] == stream), None)
                polls.write(json.dumps({
                    "t": t, "server": name, "holder": holder,
                    "connected": state.get("connected"),
                    "refused": state.get("refused_publishes")}) + "\n")
            stop.wait(args.poll_ms / 1000)
    viewer.terminate()
    try:
        viewer.wait(5)
    except subprocess.TimeoutExpired:
        viewer.kill()
    reader.join(5)


def report(args):
    frames = []
    with open(args.frames) as f:
        for line in f:
            t, _ = line.split()
            frames.append(float(t))
    polls = []
    with open(args.polls) as f:
        polls = [json.loads(line) for line in f if line.strip()]
    kill = args.kill
    out = {"frames": len(frames)}
    window = [t for t in frames if t >= kill - 2]
    best = None
    for before, after in zip(window, window[1:]):
        if best is None or after - before > best[1] - best[0]:
            best = (before, after)
    after_kill = [t for t in frames if t > kill]
    if best is None or not after_kill or best[1] <= kill:
        out["gap_s"] = None
        out["resumed"] = False
    else:
        out["gap_s"] = round(best[1] - best[0], 2)
        out["last_frame_before_gap_s"] = round(best[0] - kill, 2)  # relative to the kill
        out["kill_to_first_frame_after_s"] = round(best[1] - kill, 2)
        out["frames_after_gap"] = sum(1 for t in frames if t >= best[1])
        out["resumed"] = out["frames_after_gap"] >= 30

    def first(server, pred):
        for p in polls:
            if p["server"] == server and p["t"] > kill and not p.get("error") and pred(p):
                return round(p["t"] - kill, 2)
        return None

    out["edge_holder_gone_s"] = first("edge", lambda p: p["holder"] != args.old)
    out["edge_holder_new_s"] = first("edge", lambda p: p["holder"] == args.new)
    out["new_claimed_s"] = first("new", lambda p: p["holder"] == args.new)
    refused = [p["refused"] for p in polls if p["server"] == "new" and p.get("refused") is not None]
    out["new_refused_publishes"] = refused[-1] if refused else None
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    w = sub.add_parser("watch")
    w.add_argument("--url", required=True)
    w.add_argument("--frames", required=True)
    w.add_argument("--polls", required=True)
    w.add_argument("--server", action="append", default=[], help="NAME=MGMT_PORT")
    w.add_argument("--stream", default="live/x")
    w.add_argument("--poll-ms", type=int, default=100)
    r = sub.add_parser("report")
    r.add_argument("--frames", required=True)
    r.add_argument("--polls", required=True)
    r.add_argument("--kill", type=float, required=True)
    r.add_argument("--old", required=True, help="the killed holder's server id")
    r.add_argument("--new", required=True, help="the new holder's server id")
    args = parser.parse_args()
    if args.command == "watch":
        watch(args)
    else:
        report(args)
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
