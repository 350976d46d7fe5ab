#!/usr/bin/env python3
"""The Markdown tables of bench/webrtc_latency/run.sh, from the files of one run.

  report.py DIR SETTLE WINDOW "PLAYER..." GOP...

PLAYERs are browser.mjs's modes (whep, janus, hls). For each GOP (frames between
keyframes) DIR holds:
  send_<gop>.log                      "N wall-time": when the publisher sent frame N
                                      (bench/player_latency/barcode.py clock)
  lat_<player>_<gop>.jsonl            browser.mjs's line of the long session, its frames in
                                      lat_<player>_<gop>.1.samples ("wall-time N") and, for
                                      WebRTC, .1.recv ("N arrival-wall-time")
  join_<player>_<gop>.jsonl           one line per short join, frames in .<join>.samples

Table 1, per player and GOP: glass-to-glass p50/p95, freezes and fps over WINDOW s from
SETTLE s after the first frame (barcode.py stats), for WebRTC the part of it before the
browser (frame's packets arrived − frame sent), and the time to first frame over the
joins. Table 2, per join: where in the GOP the join landed (frames since the last
keyframe the publisher had sent), the time to first frame, which frame came first, the
glass-to-glass delay of the first frame, how long after the first frame the picture was
live (glass to glass under LIVE_S for the first time) and the delay of the join's last
second.

Standard library only (barcode.py is imported from bench/player_latency).
"""

import contextlib
import io
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "player_latency"))
import barcode  # noqa: E402

LABEL = {
    "whep": "strom WebRTC (WHEP)",
    "janus": "Janus 1.1 streaming (WebRTC)",
    "hls": "strom LL-HLS in hls.js, 500 ms parts",
}


def read_pairs(path, first_is_int):
    pairs = []
    try:
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) == 2:
                    a, b = parts
                    pairs.append((int(a), float(b)) if first_is_int else (float(a), int(b)))
    except FileNotFoundError:
        pass
    return pairs


def read_lines(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.startswith("{")]
    except FileNotFoundError:
        return []


def sent_times(path):
    sent = {}
    for n, t in read_pairs(path, True):
        sent.setdefault(n, t)
    return sent


def window_stats(send, samples, settle, window):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        barcode.stats(send, samples, settle, window)
    return json.loads(out.getvalue())


def arrival_p50(sent, samples_path, recv_path, settle, window):
    """Median of (packets arrived - frame sent) over the same window as the latency."""
    shown = read_pairs(samples_path, False)
    if not shown:
        return None
    start = shown[0][0] + settle
    delays = [t - sent[n] for n, t in read_pairs(recv_path, True) if n in sent and start <= t < start + window]
    return round(statistics.median(delays), 3) if delays else None


def live_frame(sent, wall):
    """The last frame the publisher had sent by `wall`."""
    before = [n for n, t in sent.items() if t <= wall]
    return max(before) if before else None


# A picture this close to the publisher's counts as live (WebRTC plays 0.05-0.1 s behind).
LIVE_S = 0.2


def live_after_ms(sent, shown):
    """Milliseconds from the first frame shown to the first one shown under LIVE_S."""
    for t, n in shown:
        if n in sent and t - sent[n] < LIVE_S:
            return round((t - shown[0][0]) * 1000)
    return None


def fmt(v, digits=2):
    return "–" if v is None else f"{v:.{digits}f}"


def webrtc_notes(line):
    stats = line.get("stats") or {}
    video, audio = stats.get("video") or {}, stats.get("audio") or {}
    notes = []
    if video:
        notes.append(f"jitter buffer {video.get('jitterBufferMs')} ms, decode {video.get('decodeMs')} ms")
        notes.append(f"{video.get('lost')} packets lost, {video.get('framesDropped')} frames dropped, "
                     f"{video.get('freezes')} freezes (Chrome's count)")
    if audio and audio.get("packets"):
        notes.append(f"audio {(audio.get('codec') or '?').split('/')[-1]}: {audio.get('packets')} packets")
    else:
        notes.append("no audio")
    return "; ".join(notes)


def main(argv):
    if len(argv) < 6:
        sys.exit(__doc__)
    d, settle, window = argv[1], float(argv[2]), float(argv[3])
    players = argv[4].split()
    gops = [int(g) for g in argv[5:]]
    rows, joins = [], []
    for gop in gops:
        send = os.path.join(d, f"send_{gop}.log")
        sent = sent_times(send)
        for player in players:
            webrtc = player != "hls"
            lat = read_lines(os.path.join(d, f"lat_{player}_{gop}.jsonl"))
            samples = os.path.join(d, f"lat_{player}_{gop}.1.samples")
            r = window_stats(send, samples, settle, window)
            ttffs = [j["firstFrameMs"] for j in read_lines(os.path.join(d, f"join_{player}_{gop}.jsonl"))
                     if j.get("firstFrameMs") is not None]
            ttff = (f"{statistics.median(ttffs):.0f} ({min(ttffs)}–{max(ttffs)}, {len(ttffs)} joins)"
                    if ttffs else "–")
            line = lat[0] if lat else {}
            if line.get("error"):
                notes = f"failed: {line['error']}"
            elif webrtc:
                notes = webrtc_notes(line)
            else:
                notes = f"hls.latency {line.get('hlsLatency')} s, {line.get('waiting')} waiting, {line.get('hlsErrors')} errors"
            before = (arrival_p50(sent, samples, os.path.join(d, f"lat_{player}_{gop}.1.recv"), settle, window)
                      if webrtc else None)
            rows.append(f"| {LABEL[player]} | {gop / 30:g} s | {fmt(r['latency_p50'])} | {fmt(r['latency_p95'])} | "
                        f"{fmt(before, 3) if webrtc else 'n/a'} | {r.get('freezes', '–')} | "
                        f"{r.get('fps', '–')} | {ttff} | {notes} |")
            for j in read_lines(os.path.join(d, f"join_{player}_{gop}.jsonl")):
                if j.get("error"):
                    joins.append(f"| {LABEL[player]} | {gop / 30:g} s | {j['join']} | | | | | | | failed: {j['error']} |")
                    continue
                live = live_frame(sent, j["joinWall"])
                shown = read_pairs(os.path.join(d, f"join_{player}_{gop}.{j['join']}.samples"), False)
                first = shown[0][0] - sent[shown[0][1]] if shown and shown[0][1] in sent else None
                last_t = shown[-1][0] if shown else 0
                tail = [t - sent[n] for t, n in shown if t >= last_t - 1 and n in sent]
                steps = (f"SDP exchange {j.get('answerMs')} ms, connected at {j.get('connectedMs')} ms, "
                         f"first frame {j.get('firstFrameAfterConnectMs')} ms after"
                         if webrtc else f"hls.latency {j.get('hlsLatency')} s")
                at_live = live_after_ms(sent, shown) if webrtc else None
                joins.append(
                    f"| {LABEL[player]} | {gop / 30:g} s | {j['join']} | "
                    f"{'–' if live is None else live % gop} | {j['firstFrameMs']} | "
                    f"{'–' if live is None or j.get('firstN') is None else j['firstN'] - live} | "
                    f"{fmt(first)} | {'n/a' if not webrtc else '–' if at_live is None else at_live} | "
                    f"{fmt(statistics.median(tail) if tail else None)} | {steps} |")
    print("| player | keyframe interval | glass-to-glass p50 s | p95 s | of it before the browser, p50 s "
          "| freezes > 0.5 s | fps | time to first frame ms, p50 (range) | notes |")
    print("|---|---:|---:|---:|---:|---:|---:|---|---|")
    print("\n".join(rows))
    print()
    print("| player | keyframe interval | join | frames since keyframe at join | first frame ms "
          "| first frame shown − live frame at join | glass-to-glass of first frame s "
          f"| live (< {LIVE_S} s) after ms | glass-to-glass, last second s | start-up |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    print("\n".join(joins))


if __name__ == "__main__":
    main(sys.argv)
