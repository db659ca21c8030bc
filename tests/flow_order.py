"""Whether a written trace's flows reach a viewer whole: Perfetto reads events in time
order and drops a flow whose end it meets before its start (from JSON with a stat, from
protobuf silently)."""
from __future__ import annotations

import json
from pathlib import Path

from dspsim.traces.perfetto_proto import _pb2


def flows_end_after_they_begin(path: str | Path) -> bool:
    """Whether every flow of the trace file at ``path`` (Chrome JSON or Perfetto protobuf)
    has one start and one end, the start met first."""
    path = Path(path)
    if path.suffix == ".json":
        starts: dict = {}
        ends: dict = {}
        for event in json.loads(path.read_text())["traceEvents"]:
            if event.get("ph") in ("s", "f"):
                (starts if event["ph"] == "s" else ends)[event["id"]] = event["ts"]
        return starts.keys() == ends.keys() and all(ends[k] >= starts[k] for k in starts)
    trace = _pb2().Trace()
    trace.ParseFromString(path.read_bytes())
    started: set[int] = set()
    ended: set[int] = set()
    for packet in trace.packet:  # in the order a viewer reads them: by time
        event = packet.track_event
        if any(flow not in started for flow in event.terminating_flow_ids):
            return False
        started.update(event.flow_ids)
        ended.update(event.terminating_flow_ids)
    return started == ended
