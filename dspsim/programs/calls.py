"""The ``streams`` section of a program file: calls with C arguments by buffer name,
records and waits, each checked with its key path."""
from __future__ import annotations

import difflib
from typing import Any

from dspsim.programs.buffers import Buffer
from dspsim.programs.program import Program
from dspsim.sim.errors import DspSimError

_CALL = ("call", "args", "core")
#: C arguments of type int; every other non-operand argument is a float parameter
_INT_ARGS = ("length", "core_mask")


def enqueue_items(loader, node: dict, program: Program, buffers: dict[str, Buffer]) -> None:
    """Create the streams of ``node`` in ``program`` and enqueue their items; problems go
    to ``loader.problem(key path, message)``."""
    recorded: dict[str, str] = {}
    for name, items in node.items():
        if not isinstance(items, list):
            continue
        for k, item in enumerate(items):
            if isinstance(item, dict) and isinstance(item.get("record"), str):
                event = item["record"]
                if event in recorded:
                    loader.problem(f"streams.{name}[{k}].record",
                                   f"event {event!r} is already recorded at {recorded[event]}; "
                                   f"use a new event name")
                else:
                    recorded[event] = f"streams.{name}[{k}]"
    events = {e: program.event(e) for e in recorded}
    for name, items in node.items():
        at = f"streams.{name}"
        if not isinstance(name, str) or not name:
            loader.problem(at, "a stream name is text")
            continue
        if not isinstance(items, list):
            loader.problem(at, f"must be a list of calls, records and waits, got {items!r}")
            continue
        stream = program.stream(name)
        for k, item in enumerate(items):
            _item(loader, stream, item, f"{at}[{k}]", events, buffers)


def unknown_call_keys(loader, node: Any) -> None:
    """Report the keys no call takes, on their own: they need no buffer or chip to check."""
    if not isinstance(node, dict):
        return
    for name, items in node.items():
        for k, item in enumerate(items if isinstance(items, list) else []):
            if isinstance(item, dict) and "call" in item and not {"record", "wait"} & set(item):
                for key in sorted(set(item) - set(_CALL), key=str):
                    loader.problem(f"streams.{name}[{k}].{key}",
                                   f"unknown key; a call takes {', '.join(_CALL)}")


def _item(loader, stream, item: Any, at: str, events: dict, buffers: dict[str, Buffer]) -> None:
    if not isinstance(item, dict) or len({"call", "record", "wait"} & set(item)) != 1:
        loader.problem(at, f"must be one of {{call: NAME, args: [...]}}, {{record: EVENT}} or "
                       f"{{wait: EVENT}}, got {item!r}")
        return
    if "record" in item or "wait" in item:
        kind = "record" if "record" in item else "wait"
        if len(item) != 1:
            loader.problem(at, f"a {kind} takes only the event name")
            return
        event = item[kind]
        if not isinstance(event, str) or not event:
            loader.problem(f"{at}.{kind}", f"must be an event name, got {event!r}")
        elif event not in events:
            hint = difflib.get_close_matches(event, list(events), 1)
            loader.problem(f"{at}.wait", f"event {event!r} is never recorded"
                           + (f"; did you mean {hint[0]!r}?" if hint else
                              "; record it on the stream that must finish first"))
        elif kind == "record":
            stream.record(events[event])
        else:
            stream.wait(events[event])
        return
    name = item["call"]
    try:
        cname = stream.program.chip.resolve(name)
    except DspSimError as exc:
        loader.problem(f"{at}.call", str(exc))
        return
    args = _arguments(loader, cname, item.get("args"), f"{at}.args", buffers)
    core = None
    if item.get("core") is not None and cname.storage == "shared":
        loader.problem(f"{at}.core", f"{cname.name} runs on the cores of its core_mask; core "
                       f"names the executing core of a private-storage (_p) call: remove it")
    elif item.get("core") is not None:
        core = loader.integer(item["core"], f"{at}.core")
    if args is None:
        return
    try:
        stream.enqueue(name, **args, core=core)
    except DspSimError as exc:
        loader.problem(at, str(exc))


def _arguments(loader, cname, node: Any, at: str, buffers: dict[str, Buffer]
               ) -> dict[str, Any] | None:
    """The call's arguments by C name: buffers to addresses, parameters to values."""
    names = cname.args
    if isinstance(node, list):
        if len(node) > len(names):
            loader.problem(at, f"{cname.name} takes {len(names)} arguments ({', '.join(names)}), "
                           f"got {len(node)}")
            return None
        given = {names[i]: (value, f"{at}[{i}]") for i, value in enumerate(node)}
    elif isinstance(node, dict):
        unknown = sorted(set(node) - set(names), key=str)
        for key in unknown:
            loader.problem(f"{at}.{key}", f"{cname.name} has no argument {key!r}; its "
                           f"arguments: {', '.join(names)}")
        given = {k: (v, f"{at}.{k}") for k, v in node.items() if k in names}
    else:
        loader.problem(at, f"must be a list (C order: {', '.join(names)}) or a mapping by "
                       f"argument name, got {node!r}")
        return None
    operands = set(cname.operator.inputs) | {cname.operator.output}
    args: dict[str, Any] = {}
    ok = True
    length = None
    for arg, (value, where) in given.items():
        if arg in operands:
            if isinstance(value, str) and not value.startswith("$"):
                if value not in buffers:
                    hint = difflib.get_close_matches(value, list(buffers), 1)
                    loader.problem(where, f"unknown buffer {value!r}"
                                   + (f"; did you mean {hint[0]!r}?" if hint else
                                      f"; buffers: {', '.join(buffers)}"))
                    ok = False
                    continue
                buffer = buffers[value]
                if buffer.dtype != cname.dtype.name:
                    loader.problem(where, f"buffer {value!r} holds {buffer.dtype}, "
                                   f"{cname.name} takes {cname.dtype.name}")
                    ok = False
                args[arg] = (buffer, where)
                continue
            value = loader.integer(value, where)  # a raw address
        else:
            value = loader.value(value, where)
            if (arg in _INT_ARGS and isinstance(value, float) and value.is_integer()
                    and abs(value) <= 2 ** 53):  # 256.0 or 2.56e2 from a file or --param
                value = int(value)
        if value is None and isinstance(given[arg][0], str):
            ok = False
            continue
        args[arg] = value
        if arg == "length":
            length = value
    resolved = {}
    for arg, value in args.items():
        if isinstance(value, tuple):
            buffer, where = value
            if isinstance(length, int) and length > buffer.length:
                loader.problem(where, f"buffer {buffer.name!r} has {buffer.length:,} elements, "
                               f"the call's length is {length:,}; lengthen the buffer or "
                               f"shorten the call")
                ok = False
            value = buffer.span.address
        resolved[arg] = value
    return resolved if ok else None
