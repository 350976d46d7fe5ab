#!/usr/bin/env python3
"""The registry poller and the report of bench/cluster/claims.sh (standard library only).

poll: reads GET /manage/cluster of one server (the edge) every --poll-ms and records, per
    stream of --app, the time the answer that first listed it arrived ("seen"), or with
    --gone the time the first answer without it arrived, until --expect streams are
    listed (or, with --gone, none is), or --timeout s; --ready FILE is created after the
    first answer. Writes one JSON object to --out:
    {"times": {stream: unix time}, "polls": [[unix time, streams listed, answer ms]],
    "cpu_s": the poller's own CPU seconds}.
report: joins the load generator's events (JSON lines: stream, started_ms, accepted_ms)
    with the poller's output(s) and prints one JSON object: publish accepted -> listed
    at the edge (p50/p90/p99/max), first publish -> every stream listed, and with
    --gone/--stopped the generator's stop -> every stream gone from the edge's copy.
"""

import argparse
import json
import os
import sys
import time
import urllib.request


def fetch(port):
    started = time.time()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/manage/cluster", timeout=30) as answer:
        state = json.load(answer)
    return state, time.time(), (time.time() - started) * 1000


def poll(args):
    times, polls, known = {}, [], None
    deadline = time.time() + args.timeout
    while time.time() < deadline:
        try:
            state, arrived, ms = fetch(args.port)
        except (OSError, ValueError):
            time.sleep(args.poll_ms / 1000)
            continue
        listed = {s["stream"] for s in state.get("streams", []) if s["app"] == args.app}
        polls.append([round(arrived, 3), len(listed), round(ms, 1)])
        if args.ready and len(polls) == 1:
            open(args.ready, "w").close()
        if args.gone:
            if known is None:
                known = listed
            for name in known - listed:
                times.setdefault(name, arrived)
            if not listed:
                break
        else:
            for name in listed:
                times.setdefault(name, arrived)
            if len(listed) >= args.expect:
                break
        time.sleep(args.poll_ms / 1000)
    cpu = os.times()
    with open(args.out, "w") as out:
        json.dump({"times": times, "polls": polls,
                   "cpu_s": round(cpu.user + cpu.system, 2)}, out)


def quantiles(values):
    values = sorted(values)
    if not values:
        return {}
    at = lambda q: values[min(len(values) - 1, int(len(values) * q))]
    return {"n": len(values), "p50": round(at(0.5), 3), "p90": round(at(0.9), 3),
            "p99": round(at(0.99), 3), "max": round(values[-1], 3)}


def report(args):
    events = []
    with open(args.events) as f:
        events = [json.loads(line) for line in f if line.strip()]
    accepted = {e["stream"]: e["accepted_ms"] / 1000 for e in events if "accepted_ms" in e}
    with open(args.seen) as f:
        seen = json.load(f)
    out = {
        "publishers_answered": len(events),
        "accepted": len(accepted),
        "refused": sum(1 for e in events if "refused" in e),
        "failed": sum(1 for e in events if "error" in e),
    }
    lags = [seen["times"][s] - t for s, t in accepted.items() if s in seen["times"]]
    out["listed_at_edge"] = len(seen["times"])
    out["accepted_to_listed_s"] = quantiles(lags)
    polls = seen["polls"]
    out["edge_poll_ms"] = quantiles([p[2] for p in polls]) if polls else {}
    out["poller_cpu_s"] = seen.get("cpu_s")
    if events and seen["times"]:
        first = min(e["started_ms"] for e in events) / 1000
        last_accept = max(accepted.values()) if accepted else first
        all_listed = max(seen["times"].values())
        out["first_publish_to_all_listed_s"] = round(all_listed - first, 2)
        out["last_accept_to_all_listed_s"] = round(all_listed - last_accept, 2)
    if args.gone and args.stopped:
        with open(args.gone) as f:
            gone = json.load(f)
        out["gone_from_edge"] = len(gone["times"])
        if gone["times"]:
            out["stop_to_all_gone_s"] = round(max(gone["times"].values()) - args.stopped, 2)
            out["stop_to_gone_s"] = quantiles([t - args.stopped for t in gone["times"].values()])
        remaining = gone["polls"][-1][1] if gone["polls"] else None
        out["still_listed_at_end"] = remaining
    print(json.dumps(out))


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("poll")
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--app", default="live")
    p.add_argument("--expect", type=int, default=0)
    p.add_argument("--gone", action="store_true")
    p.add_argument("--poll-ms", type=int, default=200)
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--out", required=True)
    p.add_argument("--ready", help="a file created once the first answer is read")
    r = sub.add_parser("report")
    r.add_argument("--events", required=True)
    r.add_argument("--seen", required=True)
    r.add_argument("--gone")
    r.add_argument("--stopped", type=float)
    args = parser.parse_args()
    poll(args) if args.command == "poll" else report(args)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
