"""Operator methods that explain themselves: ``chip.fp_relu_grad_s`` as a real function.

``help(chip.fp_relu_grad_s)``, ``inspect.signature`` and an editor's signature help show
the C arguments in order, the formula, the dtypes the chip offers the operator in, its
parameters with their defaults, and the cost of one vector iteration.
"""
from __future__ import annotations

import inspect
import textwrap
from collections.abc import Callable

from dspsim import kernels
from dspsim.result import RunResult
from dspsim.sim.chip.load import ChipConfig

_STORAGE_TEXT = {
    "shared": "shared storage: operands in DDR or shared SRAM; the length is split over the "
              "cores that core_mask selects, each running a double-buffered DMA pipeline",
    "private": "private storage: operands already in one core's L2; that core runs it "
               "alone, without DMA",
}


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, width=88, break_long_words=False, break_on_hyphens=False)


def operator_signature(cname: kernels.CName) -> inspect.Signature:
    """The Python signature of a C-named operator: C arguments in order, then options."""
    params = {p.name: p for p in cname.operator.params}
    positional = []
    for arg in cname.args:
        default: object
        if arg in params:
            default = params[arg].default
            annotation = "float"
        elif arg == "core_mask":
            default, annotation = None, "int | None"
        else:
            default, annotation = inspect.Parameter.empty, "int"
        positional.append(inspect.Parameter(arg, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                            default=default, annotation=annotation))
    options = [
        inspect.Parameter("core", inspect.Parameter.KEYWORD_ONLY, default=None,
                          annotation="int | None"),
        inspect.Parameter("numerics", inspect.Parameter.KEYWORD_ONLY, default=True,
                          annotation="bool"),
        inspect.Parameter("fidelity", inspect.Parameter.KEYWORD_ONLY, default="fast",
                          annotation="str"),
    ]
    return inspect.Signature(positional + options, return_annotation="RunResult")


def operator_doc(cname: kernels.CName, config: ChipConfig) -> str:
    """The docstring of a C-named operator on the chip ``config`` describes."""
    op, dtype = cname.operator, cname.dtype
    about = (f"{op.summary}, in {dtype.name} ({dtype.c_type}), on {config.name}; "
             f"{_STORAGE_TEXT[cname.storage]}.")
    lines = [cname.signature(), "", *_wrap(about), "", f"    {op.formula}", "",
             "Arguments, in C order:"]
    params = {p.name: p for p in op.params}
    for arg in cname.args:
        if arg in op.inputs:
            text = f"address of the input operand ({dtype.name})"
        elif arg == op.output:
            text = f"address of the output operand ({dtype.name}); an input's own address " \
                   f"runs in place"
        elif arg == "length":
            text = "elements"
        elif arg == "core_mask":
            every = (1 << config.cores) - 1
            text = f"bit i selects core i (default {every:#x}: all {config.cores} cores)"
        else:
            p = params[arg]
            text = p.doc or "parameter"
            if p.default is not None:
                text += f"; default {p.default:g}"
            if p.minimum is not None:
                text += f"; at least {p.minimum:g}"
        lines.append(f"  {arg:<10} {text}")
    lines += [
        "Keyword-only:",
        "  core       executing core of a private-storage call given core-local addresses",
        "  numerics   False times the call without computing its result",
        "  fidelity   'fast' (default) or 'detailed' (DMA bursts, every vector iteration)",
        "",
        *_wrap(f"Dtypes on {config.name}: "
               + ", ".join(f"{kernels.c_name(op, d, cname.storage)} ({d})"
                           for d in config.dtypes if d in kernels.DTYPES) + "."),
        *_wrap("Instruction mix per vector iteration: "
               + ", ".join(f"{k} {v}" for k, v in op.mix.items()) + "."),
    ]
    if op.notes:
        lines += _wrap(f"Accuracy against a float64 reference: {op.notes}.")
    lines.append("Returns a RunResult: cycles, time, bandwidth, bound, per-core activity.")
    return "\n".join(lines)


def operator_method(call: Callable[..., RunResult], config: ChipConfig,
                    cname: kernels.CName) -> Callable[..., RunResult]:
    """``chip.<C name>``: a function calling ``call`` (a chip's ``call``) with the
    operator's own signature and help."""
    name = cname.name

    def method(*args, core=None, numerics=True, fidelity="fast", **kwargs):
        return call(name, *args, core=core, numerics=numerics, fidelity=fidelity, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = operator_doc(cname, config)
    method.__signature__ = operator_signature(cname)  # type: ignore[attr-defined]
    method.__module__ = "dspsim.chip"
    return method
