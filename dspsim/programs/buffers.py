"""Buffers of a program file: where they live and what they hold at the start.

A buffer has a length in elements and a dtype; it sits at a given ``address`` or is placed
automatically in a shared region (``ddr`` by default, or ``shared_sram``), first fit after
the buffers already there, 64-byte aligned. Its initial contents are random numbers drawn
from a seed, zeros, or a ``.npy`` file; a buffer without ``init`` must be produced by a
call before any call reads it.
"""
from __future__ import annotations

import dataclasses
import math
import os
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

import ml_dtypes
import numpy as np

from dspsim import kernels
from dspsim.sim.chip.load import ChipConfig
from dspsim.sim.errors import DspSimError
from dspsim.sim.memory import Memory, Span

#: automatic placement aligns every buffer to this many bytes (any dtype, any burst)
ALIGN = 64
#: elements per block when drawing random contents
BLOCK_ELEMENTS = 1 << 18


@dataclass(frozen=True)
class Init:
    """How a buffer starts: ``kind`` is "random", "zeros" or "npy"."""

    kind: str
    seed: int = 0
    low: float | None = None  # random: uniform in [low, high) when both are given,
    high: float | None = None  # standard normal otherwise
    path: str | None = None  # npy: the file, relative paths from the program file

    @property
    def file(self) -> str:
        """The ``.npy`` file of an "npy" init."""
        assert self.path is not None, f"a {self.kind!r} init names no file"
        return self.path


@dataclass
class Buffer:
    """One named buffer of a program file."""

    name: str
    length: int
    dtype: str
    address: int | None  # None: placed automatically
    region: str
    init: Init | None
    span: Span | None = None  # once placed

    @property
    def itemsize(self) -> int:
        return kernels.DTYPES[self.dtype].itemsize

    @property
    def placed(self) -> Span:
        """The span :func:`place` gave this buffer (a program is only run once placed)."""
        assert self.span is not None, f"buffer {self.name!r} has not been placed yet"
        return self.span


def parse_init(loader, node: Any, at: str) -> Init | None:
    """A buffer's ``init`` (zeros, {random: {seed, low, high}} or {npy: FILE}); problems go
    to ``loader.problem(key path, message)``."""
    if node is None:
        return None
    if node == "zeros":
        return Init("zeros")
    if isinstance(node, dict) and len(node) == 1 and "npy" in node:
        if not isinstance(node["npy"], str) or not node["npy"].endswith(".npy"):
            loader.problem(f"{at}.npy", f"must be the path of a .npy file, got {node['npy']!r}")
            return None
        return Init("npy", path=node["npy"])
    if isinstance(node, dict) and len(node) == 1 and "random" in node:
        spec = node["random"]
        if not isinstance(spec, dict) or set(spec) - {"seed", "low", "high"}:
            loader.problem(f"{at}.random", "must be a mapping with seed and, for uniform "
                           "numbers, low and high")
            return None
        seed = loader.integer(spec.get("seed", 0), f"{at}.random.seed")
        low, high = (loader.value(spec.get(k), f"{at}.random.{k}") for k in ("low", "high"))
        if (low is None) != (high is None) or (low is not None and not (
                isinstance(low, (int, float)) and isinstance(high, (int, float))
                and not isinstance(low, bool) and not isinstance(high, bool)
                and low < high and math.isfinite(float(high) - float(low)))):
            loader.problem(f"{at}.random", f"low and high must be finite numbers with "
                           f"low < high, got {low!r} and {high!r}")
            return None
        return Init("random", seed=seed or 0, low=low, high=high)
    loader.problem(at, f"must be zeros, {{random: {{seed: N}}}} or {{npy: FILE.npy}}, "
                   f"got {node!r}")
    return None


def init_fits(loader, init: Init, dtype: str, at: str) -> bool:
    """Whether random bounds lie within ``dtype``'s range (else a problem at ``at``)."""
    if init.kind != "random" or init.low is None or init.high is None:
        return True
    limit = float(ml_dtypes.finfo(kernels.DTYPES[dtype].numpy).max)
    if max(abs(init.low), abs(init.high)) > limit:
        loader.problem(f"{at}.random", f"low and high must lie within {dtype}'s range "
                       f"(±{limit:g}), got {init.low!r} and {init.high!r}")
        return False
    return True


def place(buffers: list[Buffer], config: ChipConfig, memory: Memory, where: dict[str, str],
          problems: list[str]) -> None:
    """Give every buffer its span: the given address, or the first free aligned gap of its
    region. Appends a problem (with the buffer's key path from ``where``) for an address
    outside the map, a buffer that does not fit, or two buffers that overlap."""
    for buffer in buffers:
        if buffer.address is not None:
            try:
                buffer.span = memory.resolve(buffer.address, buffer.length * buffer.itemsize,
                                             alignment=buffer.itemsize)
            except DspSimError as exc:
                problems.append(f"{where[buffer.name]}.address: {exc}")
    placed = sorted(((b, b.span) for b in buffers if b.span is not None),
                    key=lambda pair: (pair[1].region, pair[1].core or 0, pair[1].offset))
    for (a, a_span), (b, b_span) in pairwise(placed):
        if a_span.overlaps(b_span):
            problems.append(
                f"{where[b.name]}: buffer {b.name!r} [{b_span.address:#x}, "
                f"{b_span.address + b_span.nbytes:#x}) overlaps buffer {a.name!r} "
                f"[{a_span.address:#x}, {a_span.address + a_span.nbytes:#x}); move one of "
                f"them or leave out its address to place it automatically")
    regions = {r.name: r for r in config.shared_regions}
    for buffer in buffers:
        if buffer.address is not None:
            continue
        region = regions[buffer.region]
        taken = sorted((b.span.offset, b.span.end_offset) for b in buffers
                       if b.span is not None and b.span.region == region.name)
        nbytes = buffer.length * buffer.itemsize
        offset = 0
        for start, end in taken:
            if offset + nbytes <= start:
                break
            offset = max(offset, -(-end // ALIGN) * ALIGN)
        if offset + nbytes > region.size_bytes:
            problems.append(
                f"{where[buffer.name]}: buffer {buffer.name!r} ({nbytes:,} bytes) does not fit "
                f"in {region.name} ({region.size_bytes:,} bytes) after the buffers placed "
                f"there; shorten it or place it in another region")
            continue
        buffer.span = memory.resolve(region.base_address + offset, nbytes)


#: the first bytes of every .npy file
NPY_MAGIC = b"\x93NUMPY"


def load_npy(path: str, buffer: Buffer) -> np.ndarray:
    """The contents of a ``.npy`` file for ``buffer``: real numbers, exactly its length.

    Raises ValueError with what is wrong (the loader adds the key path).
    """
    if os.path.exists(path) and not os.path.isfile(path):  # a pipe or device never ends
        raise ValueError(f"{path} is not a regular file (a folder, device or pipe); give a "
                         f".npy file written by numpy.save")
    try:
        with open(path, "rb") as handle:
            magic = handle.read(len(NPY_MAGIC))
        if magic != NPY_MAGIC:  # numpy would take it for a pickle and talk of allow_pickle
            raise ValueError("it does not start as a .npy file does (\\x93NUMPY)")
        data = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError, EOFError) as exc:
        reason = getattr(exc, "strerror", None) or " ".join(str(exc).split())
        if "allow_pickle" in reason:
            reason = "it holds Python objects, not numbers"
        raise ValueError(f"cannot read {path}: {reason}; give a .npy file written by "
                         f"numpy.save") from None
    if not isinstance(data, np.ndarray) or data.dtype.kind not in "biuf":
        raise ValueError(f"{path} does not hold an array of real numbers")
    if data.size != buffer.length:
        raise ValueError(f"{path} holds {data.size:,} values, buffer {buffer.name!r} has "
                         f"length {buffer.length:,}; make them equal")
    largest = _largest_finite(data.reshape(-1))
    limit = float(ml_dtypes.finfo(kernels.DTYPES[buffer.dtype].numpy).max)
    if largest > limit:
        raise ValueError(f"{path} holds {largest:g}, beyond the largest {buffer.dtype} "
                         f"({limit:g}) that buffer {buffer.name!r} can hold; scale the data")
    return data


def _largest_finite(data: np.ndarray) -> float:
    """The largest magnitude among the finite values (NaN and infinities are data too)."""
    largest = 0.0
    for first in range(0, data.size, BLOCK_ELEMENTS):  # blocks: a file may exceed host RAM
        block = np.asarray(data[first:first + BLOCK_ELEMENTS])
        if block.dtype.kind == "f":
            block = np.abs(block[np.isfinite(block)])
        elif block.dtype.kind in "iu":
            block = np.abs(block.astype(np.float64))
        if block.size:
            largest = max(largest, float(block.max()))
    return largest


def fill(memory: Memory, buffer: Buffer, base: str, data: np.ndarray | None = None) -> None:
    """Store ``buffer``'s initial contents in ``memory`` (files relative to ``base``;
    ``data``: the file's contents, already checked by :func:`load_npy`)."""
    for core in buffer_cores(memory, buffer):
        _fill_core(memory, buffer, base, data, core)


def buffer_cores(memory: Memory, buffer: Buffer) -> list[int | None]:
    """The cores whose memory a buffer names: every core for a core-local L2 address (each
    core sees its own L2 there, so whichever core a call runs on finds the data), else the
    one its span belongs to."""
    if buffer.placed.local:
        return list(range(memory.config.cores))
    return [buffer.placed.core]


def buffer_spans(memory: Memory, buffer: Buffer) -> list[Span]:
    """The spans a buffer's initial contents fill (see :func:`buffer_cores`)."""
    span = buffer.placed
    if not span.local:
        return [span]
    return [dataclasses.replace(span, core=core) for core in buffer_cores(memory, buffer)]


def _fill_core(memory: Memory, buffer: Buffer, base: str, data: np.ndarray | None,
               core: int | None) -> None:
    init, span = buffer.init, buffer.placed
    assert init is not None, f"buffer {buffer.name!r} has no initial contents to fill"
    dtype = kernels.DTYPES[buffer.dtype].numpy
    if init.kind == "zeros":
        memory.zero(span.address, buffer.length, dtype, core=core)
        return
    if init.kind == "npy":
        if data is None:
            data = load_npy(os.path.join(base, init.file), buffer)
        data = data.reshape(-1)
        for first in range(0, buffer.length, BLOCK_ELEMENTS):
            block = np.asarray(data[first:first + BLOCK_ELEMENTS]).astype(dtype)
            memory.write(span.address + first * buffer.itemsize, block, core=core)
        return
    for index, first in enumerate(range(0, buffer.length, BLOCK_ELEMENTS)):
        count = min(BLOCK_ELEMENTS, buffer.length - first)
        rng = np.random.default_rng([init.seed, index])
        if init.low is not None and init.high is not None:
            values = rng.uniform(init.low, init.high, count)
        else:
            values = rng.standard_normal(count)
        memory.write(span.address + first * buffer.itemsize, values.astype(dtype),
                     core=core)


def describe(buffer: Buffer) -> dict[str, Any]:
    """A buffer as plain data, for reports."""
    span = buffer.span
    return {"name": buffer.name, "address": hex(span.address) if span else None,
            "region": span.region if span else buffer.region, "length": buffer.length,
            "dtype": buffer.dtype, "bytes": buffer.length * buffer.itemsize,
            "init": None if buffer.init is None else buffer.init.kind}
