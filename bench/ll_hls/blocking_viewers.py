#!/usr/bin/env python3
"""LL-HLS blocking-reload load: N viewers, each on its own kept-alive HTTP/1.1 connection,
asking for the next part of the live LL-HLS playlist over and over
(`chunks_fmp4.m3u8?_HLS_msn=M&_HLS_part=P`, M/P = the part after the last one the previous
answer listed), as hls.js does in lowLatencyMode. Every request is held by the server
until that part exists, so at any time nearly all N requests are open.

Prints one JSON line: viewers connected, answers by status over the window, answers per
second, and how many answers did not list the part asked for; with SERVER_PID, the CPU
(utime + stime) the server's process tree used over the window and the answers per
second of one core that makes.

    blocking_viewers.py HOST PORT PATH VIEWERS WARMUP_SECS WINDOW_SECS [SERVER_PID]
"""

import asyncio
import json
import os
import re
import sys
import time

PART = re.compile(rb'#EXT-X-PART:[^\n]*URI="part_(\d+)_(\d+)\.m4s')
MAX_BODY = 1 << 20


def next_part(body):
    """The (msn, part) after the last part the playlist lists."""
    last = None
    for match in PART.finditer(body):
        last = (int(match.group(1)), int(match.group(2)))
    if last is None:
        return None
    # The next part of the same segment; a server whose segment ends first answers
    # with the first part of the next segment (it counts as "or later").
    return (last[0], last[1] + 1)


def record(stats, target, status, body):
    """Counts an answer to the request for part `target` (while measuring) and returns
    the part to ask for next (None: a plain reload)."""
    if stats["measuring"]:
        stats["status"][status] = stats["status"].get(status, 0) + 1
        if status == 200 and target is not None and (
            f"part_{target[0]}_{target[1]}.m4s".encode() not in body
            and f"part_{target[0] + 1}_0.m4s".encode() not in body
        ):
            stats["without_asked_part"] += 1
    if status != 200:
        return None
    return next_part(body) or target


def summary(stats, viewers, elapsed, cpu=None):
    """The report of a measuring window of `elapsed` s; `cpu`: the server's share of one
    core over it, when measured."""
    answered = sum(stats["status"].values())
    result = {
        "viewers": viewers,
        "connected": stats["connected"],
        "connect_failed": stats["connect_failed"],
        "errors": stats["errors"],
        "window_secs": round(elapsed, 2),
        "answers": answered,
        "answers_per_sec": round(answered / elapsed, 1),
        "status": {str(k): v for k, v in sorted(stats["status"].items())},
        "without_asked_part": stats["without_asked_part"],
    }
    if cpu is not None:
        result["server_cpu_percent"] = round(cpu * 100, 1)
        result["answers_per_core_sec"] = round(answered / elapsed / cpu) if cpu > 0 else None
    return result


def tree_cpu_secs(root):
    """utime + stime (seconds) of `root` and its descendants."""
    parents, times = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = int(fields[11]) + int(fields[12])
    tree, grew = {root}, True
    while grew:
        grew = False
        for pid, parent in parents.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return sum(times.get(pid, 0) for pid in tree) / os.sysconf("SC_CLK_TCK")


async def read_response(reader):
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    length = 0
    for line in head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    if length > MAX_BODY:
        raise ValueError("body too large")
    body = await reader.readexactly(length)
    return status, body


async def viewer(host, port, path, stats, stop):
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError:
        stats["connect_failed"] += 1
        return
    stats["connected"] += 1
    target = None
    try:
        while not stop.is_set():
            query = "" if target is None else f"?_HLS_msn={target[0]}&_HLS_part={target[1]}"
            request = f"GET {path}{query} HTTP/1.1\r\nHost: {host}\r\n\r\n"
            writer.write(request.encode())
            await writer.drain()
            status, body = await read_response(reader)
            target = record(stats, target, status, body)
            if status != 200:
                await asyncio.sleep(0.1)
    except (OSError, asyncio.IncompleteReadError, ValueError):
        stats["errors"] += 1
    finally:
        writer.close()


async def main():
    host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    viewers, warmup, window = int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
    server = int(sys.argv[7]) if len(sys.argv) > 7 else None
    stats = {
        "connected": 0,
        "connect_failed": 0,
        "errors": 0,
        "measuring": False,
        "status": {},
        "without_asked_part": 0,
    }
    stop = asyncio.Event()
    tasks = []
    for _ in range(viewers):
        tasks.append(asyncio.create_task(viewer(host, port, path, stats, stop)))
        await asyncio.sleep(0.002)
    await asyncio.sleep(warmup)
    cpu_before = tree_cpu_secs(server) if server else None
    stats["measuring"] = True
    began = time.monotonic()
    await asyncio.sleep(window)
    stats["measuring"] = False
    elapsed = time.monotonic() - began
    cpu_after = tree_cpu_secs(server) if server else None
    stop.set()
    cpu = (cpu_after - cpu_before) / elapsed if server else None
    print(json.dumps(summary(stats, viewers, elapsed, cpu)), flush=True)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


if __name__ == "__main__":
    asyncio.run(main())
