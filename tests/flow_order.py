"""Whether a written protobuf trace's flows reach a viewer whole: Perfetto reads its
packets in time order and silently drops a flow whose end it meets before its start.
(For Chrome JSON, :func:`dspsim.traces.validate_trace` reports such flows.)"""
from __future__ import annotations

from pathlib import Path

from dspsim.traces.perfetto_proto import _pb2


def proto_flows_start_first(path: str | Path) -> bool:
    """Whether every flow of the protobuf trace at ``path`` has one start and one end,
    the start met first."""
    trace = _pb2().Trace()
    trace.ParseFromString(Path(path).read_bytes())
    started: set[int] = set()
    ended: set[int] = set()
    for packet in trace.packet:  # in the order a viewer reads them: by time
        event = packet.track_event
        if any(flow not in started for flow in event.terminating_flow_ids):
            return False
        started.update(event.flow_ids)
        ended.update(event.terminating_flow_ids)
    return started == ended
