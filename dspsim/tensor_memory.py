"""Which numpy arrays are one tensor, which overlap, and which overlap themselves.

The ACL runtime gives each tensor one buffer in simulated memory; two arrays are one tensor
when they are the same bytes read in the same order (``a``, ``a[:]``, ``a.reshape(8, 8)``),
and arrays that share only some bytes cannot be given consistent buffers.
"""
from __future__ import annotations

import numpy as np

#: effort spent proving two strided views disjoint before calling them overlapping
OVERLAP_WORK = 10_000

try:
    from numpy.lib.array_utils import byte_bounds
except ImportError:  # numpy < 2
    byte_bounds = np.byte_bounds  # type: ignore[attr-defined]  # the stubs are numpy 2's
_TooHardError = getattr(np, "exceptions", np).TooHardError


def tensor_key(array: np.ndarray) -> tuple:
    """What makes two arrays one tensor: the same bytes read in the same element order
    (``a``, ``a[:]`` and ``a.reshape(8, 8)`` are one tensor; ``a[::-1]`` is not)."""
    if array.size == 0:
        return ("empty", id(array))  # holds no bytes: overlaps nothing
    low, high = byte_bounds(array)
    if array.flags.c_contiguous:
        return (low, high, array.dtype.str, (array.size,), (array.itemsize,))
    return (low, high, array.dtype.str, array.shape, array.strides)


def overlaps(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays share any byte (a strided pair too costly to prove disjoint
    counts as overlapping)."""
    if not np.may_share_memory(a, b):
        return False
    try:
        # numpy's stubs allow only -1 and 0, but the function takes any bound on its work
        return bool(np.shares_memory(a, b, max_work=OVERLAP_WORK))  # type: ignore[arg-type]
    except _TooHardError:
        return True


def self_overlapping(array: np.ndarray) -> bool:
    """Whether two elements of ``array`` share memory (a broadcast or ``as_strided`` view):
    true unless its axes nest, each stride spanning the axes inside it."""
    if array.size == 0:
        return False
    axes = sorted((abs(stride), size)
                  for stride, size in zip(array.strides, array.shape, strict=True) if size > 1)
    span = array.itemsize
    for stride, size in axes:
        if stride < span:
            return True
        span = stride * size
    return False
