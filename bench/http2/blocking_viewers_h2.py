#!/usr/bin/python3
"""LL-HLS blocking-reload load over HTTP/2 (h2c with prior knowledge): the viewers of
bench/ll_hls/blocking_viewers.py, each asking for the next part of the live LL-HLS
playlist over and over, but as streams multiplexed STREAMS to a connection (as a browser
tab's players share one connection) instead of a connection each. Uses Debian's
python3-h2 (run with /usr/bin/python3).

Prints the same JSON line as blocking_viewers.py, plus `connections`.

    blocking_viewers_h2.py HOST PORT PATH VIEWERS WARMUP_SECS WINDOW_SECS SERVER_PID STREAMS
"""

import asyncio
import json
import os
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.exceptions

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ll_hls"))
from blocking_viewers import MAX_BODY, record, summary, tree_cpu_secs  # noqa: E402


class Connection:
    """One HTTP/2 connection: requests as streams, answers matched by stream id."""

    def __init__(self, host, reader, writer):
        self.host, self.reader, self.writer = host, reader, writer
        config = h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        self.h2 = h2.connection.H2Connection(config=config)
        self.h2.initiate_connection()
        # A window that never holds a playlist back.
        self.h2.increment_flow_control_window(1 << 24)
        self.writer.write(self.h2.data_to_send())
        self.pending = {}

    async def get(self, path):
        stream = self.h2.get_next_available_stream_id()
        headers = [(":method", "GET"), (":scheme", "http"), (":authority", self.host), (":path", path)]
        self.h2.send_headers(stream, headers, end_stream=True)
        answer = asyncio.get_running_loop().create_future()
        self.pending[stream] = [answer, 0, bytearray()]
        self.writer.write(self.h2.data_to_send())
        await self.writer.drain()
        return await answer

    async def pump(self):
        try:
            while True:
                data = await self.reader.read(1 << 16)
                if not data:
                    break
                for event in self.h2.receive_data(data):
                    self.event(event)
                out = self.h2.data_to_send()
                if out:
                    self.writer.write(out)
        except (OSError, h2.exceptions.ProtocolError):
            pass
        for answer, _, _ in self.pending.values():
            if not answer.done():
                answer.set_exception(OSError("connection closed"))

    def event(self, event):
        entry = self.pending.get(getattr(event, "stream_id", None))
        if isinstance(event, h2.events.ResponseReceived) and entry:
            entry[1] = int(dict(event.headers).get(":status", "0"))
        elif isinstance(event, h2.events.DataReceived):
            self.h2.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            if entry:
                entry[2] += event.data
                if len(entry[2]) > MAX_BODY:
                    entry[2] = entry[2][:MAX_BODY]
        elif isinstance(event, (h2.events.StreamEnded, h2.events.StreamReset)) and entry:
            del self.pending[event.stream_id]
            if not entry[0].done():
                entry[0].set_result((entry[1], bytes(entry[2])))


async def viewer(connection, path, stats, stop):
    target = None
    try:
        while not stop.is_set():
            query = "" if target is None else f"?_HLS_msn={target[0]}&_HLS_part={target[1]}"
            status, body = await connection.get(path + query)
            target = record(stats, target, status, body)
            if status != 200:
                await asyncio.sleep(0.1)
    except OSError:
        stats["errors"] += 1


async def main():
    host, port, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    viewers, warmup, window = int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
    server, per_connection = int(sys.argv[7]), int(sys.argv[8])
    stats = {"connected": 0, "connect_failed": 0, "errors": 0, "measuring": False,
             "status": {}, "without_asked_part": 0}
    stop = asyncio.Event()
    tasks, connections = [], 0
    for first in range(0, viewers, per_connection):
        try:
            reader, writer = await asyncio.open_connection(host, port)
        except OSError:
            stats["connect_failed"] += min(per_connection, viewers - first)
            continue
        connection = Connection(host, reader, writer)
        connections += 1
        tasks.append(asyncio.create_task(connection.pump()))
        for _ in range(min(per_connection, viewers - first)):
            stats["connected"] += 1
            tasks.append(asyncio.create_task(viewer(connection, path, stats, stop)))
            await asyncio.sleep(0.002)
    await asyncio.sleep(warmup)
    cpu_before = tree_cpu_secs(server)
    stats["measuring"] = True
    began = time.monotonic()
    await asyncio.sleep(window)
    stats["measuring"] = False
    elapsed = time.monotonic() - began
    cpu = (tree_cpu_secs(server) - cpu_before) / elapsed
    stop.set()
    report = {"viewers": viewers, "connections": connections}
    report.update(summary(stats, viewers, elapsed, cpu))
    print(json.dumps(report), flush=True)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


if __name__ == "__main__":
    asyncio.run(main())
