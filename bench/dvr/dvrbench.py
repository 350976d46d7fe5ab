#!/usr/bin/env python3
"""Helpers of bench/dvr/run.sh (standard library only).

  dvrbench.py snap NAME=PID,PID... [NAME=...] -- LABEL=DIR...
      One JSON snapshot on stdout: wall time (ns); per NAME, over those PIDs and all their
      descendants, CPU (utime+stime and stime alone, clock ticks; for a group of one
      process also per thread name, first word) and the sums of /proc/PID/io write_bytes,
      cancelled_write_bytes and wchar (processes that are gone are simply absent: the run
      script checks that every process it measures is still alive); per DIR, the apparent
      size (sum of st_size) and the allocated size (st_blocks * 512) of the files below it,
      under LABEL.

  dvrbench.py report BEFORE.json AFTER.json N MEDIA_BYTES
      The deltas between two snapshots as one JSON object: window seconds, and per group
      CPU % of one core (and its system part), CPU ms per stream-second (N streams), write_bytes, wchar, and
      both divided by MEDIA_BYTES (the media that came in during the window); per DIR the
      growth (apparent and allocated) and the same ratio.

  dvrbench.py sessions BEFORE.json AFTER.json
      Two /manage/sessions answers: the bytes strom sent to its RTMP players (the ffmpeg
      recorders; publishers are not listed) between them, over the sessions present in
      both, and the frames those players lost (dropped_frames, summed, at AFTER); prints
      "<bytes> <players> <dropped frames>".

  dvrbench.py payload FILE
      Sum of the packet sizes (ffprobe -show_packets: the elementary-stream payload) and
      the duration of a media file; prints "<bytes> <seconds> <bytes per second>".

  dvrbench.py evict PATH...
      fsync and posix_fadvise(DONTNEED) every file under the PATHs, so the next read of
      them comes from the disk (only these files leave the page cache; nothing global).

  dvrbench.py timed OUT_JSON -- COMMAND...
      Runs COMMAND; writes {"rc", "wall_s", "cpu_s"} (the child's user+system time) to
      OUT_JSON.
"""

import json
import os
import resource
import subprocess
import sys
import time

HZ = os.sysconf("SC_CLK_TCK")


def proc_table():
    """pid -> (ppid, user ticks, system ticks) for every process readable now."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                line = f.read()
        except OSError:
            continue
        # The command name may hold spaces and parentheses: the fields follow the last ')'.
        fields = line[line.rfind(")") + 2 :].split()
        table[int(entry)] = (int(fields[1]), int(fields[11]), int(fields[12]))
    return table


def tree(table, roots):
    keep = {p for p in roots if p in table}
    grew = True
    while grew:
        grew = False
        for pid, (ppid, _, _) in table.items():
            if pid not in keep and ppid in keep:
                keep.add(pid)
                grew = True
    return keep


def threads_of(pid):
    """(user ticks, system ticks) of the process's threads, summed by the first word of
    the thread name (the dvr worker names its writer threads "dvr <app>/<stream>")."""
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", encoding="ascii", errors="replace") as f:
                line = f.read()
        except OSError:
            continue
        name = line[line.find("(") + 1 : line.rfind(")")].split(" ")[0] or "?"
        fields = line[line.rfind(")") + 2 :].split()
        user, system = out.get(name, (0, 0))
        out[name] = (user + int(fields[11]), system + int(fields[12]))
    return out


def io_of(pid):
    out = {"write_bytes": 0, "cancelled_write_bytes": 0, "wchar": 0}
    try:
        with open(f"/proc/{pid}/io", encoding="ascii") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key in out:
                    out[key] = int(value)
    except OSError:
        pass
    return out


def dir_size(path):
    apparent = allocated = files = 0
    for base, _, names in os.walk(path):
        for name in names:
            try:
                st = os.lstat(os.path.join(base, name))
            except OSError:
                continue
            apparent += st.st_size
            allocated += st.st_blocks * 512
            files += 1
    return {"apparent": apparent, "allocated": allocated, "files": files}


def snap(args):
    split = args.index("--") if "--" in args else len(args)
    groups, dirs = args[:split], args[split + 1 :]
    table = proc_table()
    out = {"t_ns": time.time_ns(), "groups": {}, "dirs": {}}
    for group in groups:
        name, _, pids = group.partition("=")
        roots = [int(p) for p in pids.split(",") if p]
        members = tree(table, roots)
        user = sum(table[p][1] for p in members)
        system = sum(table[p][2] for p in members)
        g = {"ticks": user + system, "sys_ticks": system, "procs": len(members)}
        if len(members) == 1:
            g["threads"] = threads_of(next(iter(members)))
        for key in ("write_bytes", "cancelled_write_bytes", "wchar"):
            g[key] = 0
        for pid in members:
            for key, value in io_of(pid).items():
                g[key] += value
        out["groups"][name] = g
    for d in dirs:
        label, _, path = d.partition("=")
        out["dirs"][label] = dir_size(path)
    json.dump(out, sys.stdout)
    print()


def report(before_path, after_path, n, media):
    with open(before_path, encoding="utf-8") as f:
        a = json.load(f)
    with open(after_path, encoding="utf-8") as f:
        b = json.load(f)
    n, media = int(n), int(media)
    secs = (b["t_ns"] - a["t_ns"]) / 1e9
    out = {"secs": round(secs, 3), "media_bytes": int(media), "groups": {}, "dirs": {}}
    for name, g1 in b["groups"].items():
        g0 = a["groups"].get(name)
        if g0 is None:
            continue
        cpu_s = (g1["ticks"] - g0["ticks"]) / HZ
        sys_s = (g1["sys_ticks"] - g0["sys_ticks"]) / HZ
        r = {
            "procs": g1["procs"],
            "cpu_pct": round(cpu_s / secs * 100, 2),
            "sys_pct": round(sys_s / secs * 100, 2),
            "cpu_ms_per_stream_s": round(cpu_s * 1000 / (n * secs), 3),
        }
        for key in ("write_bytes", "cancelled_write_bytes", "wchar"):
            r[key] = g1[key] - g0[key]
        if "threads" in g0 and "threads" in g1:
            # Threads that ended in the window are missing from AFTER: only those in both.
            r["threads"] = {
                name: {
                    "cpu_pct": round((u1 + s1 - g0["threads"][name][0] - g0["threads"][name][1]) / HZ / secs * 100, 2),
                    "sys_pct": round((s1 - g0["threads"][name][1]) / HZ / secs * 100, 2),
                }
                for name, (u1, s1) in g1["threads"].items()
                if name in g0["threads"]
            }
        r["write_amp"] = round(r["write_bytes"] / media, 3) if media else None
        r["wchar_amp"] = round(r["wchar"] / media, 3) if media else None
        out["groups"][name] = r
    for d, s1 in b["dirs"].items():
        s0 = a["dirs"].get(d, {"apparent": 0, "allocated": 0, "files": 0})
        grow = s1["apparent"] - s0["apparent"]
        alloc = s1["allocated"] - s0["allocated"]
        out["dirs"][d] = {
            "apparent": grow,
            "allocated": alloc,
            "files": s1["files"] - s0["files"],
            "apparent_amp": round(grow / media, 3) if media else None,
            "allocated_amp": round(alloc / media, 3) if media else None,
        }
    json.dump(out, sys.stdout)
    print()


def sessions(before_path, after_path):
    def load(path):
        with open(path, encoding="utf-8") as f:
            return {s["id"]: s for s in json.load(f) if s.get("type") == "RTMP"}

    a, b = load(before_path), load(after_path)
    both = [s for s in b.values() if s["id"] in a]
    sent = sum(s.get("bytes_sent", 0) - a[s["id"]].get("bytes_sent", 0) for s in both)
    dropped = sum(s.get("dropped_frames") or 0 for s in b.values())
    print(sent, len(both), dropped)


def payload(path):
    probe = subprocess.run(
        ["ffprobe", "-v", "error", "-show_entries", "packet=size", "-of", "csv=p=0", path],
        check=True,
        capture_output=True,
        text=True,
    )
    total = sum(int(x) for x in probe.stdout.split() if x.strip().isdigit())
    duration = float(
        subprocess.run(
            ["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", path],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()
    )
    print(total, round(duration, 3), round(total / duration, 1))


def evict(paths):
    for top in paths:
        for base, _, names in os.walk(top):
            for name in names:
                path = os.path.join(base, name)
                try:
                    fd = os.open(path, os.O_RDONLY)
                except OSError:
                    continue
                try:
                    os.fsync(fd)
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                except OSError:
                    pass
                finally:
                    os.close(fd)


def timed(out_path, command):
    start = time.monotonic()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    rc = subprocess.call(command)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = time.monotonic() - start
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump({"rc": rc, "wall_s": round(wall, 3), "cpu_s": round(cpu, 3)}, f)
    return rc


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "snap":
        snap(args)
    elif cmd == "report" and len(args) == 4:
        report(*args)
    elif cmd == "sessions" and len(args) == 2:
        sessions(*args)
    elif cmd == "payload" and len(args) == 1:
        payload(args[0])
    elif cmd == "evict":
        evict(args)
    elif cmd == "timed" and len(args) >= 3 and args[1] == "--":
        sys.exit(timed(args[0], args[2:]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
