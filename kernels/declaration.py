"""What a well-formed operator declaration is: every field of :class:`Operator` checked.

The library's own operators and users' kernels are declared the same way and checked by
the same code. Each problem is one :class:`KernelDeclarationError` naming the operator and
the field, what was wrong with its value, and what it should be. :func:`check_declaration`
checks the structure (when an ``Operator`` is built); :func:`probe_formulas` also runs
``compute``, ``reference``, ``error_bound`` and ``sample`` on a few elements, so that a
formula that cannot run fails when the kernel is loaded rather than in the middle of a
sweep.
"""
from __future__ import annotations

import math
import re
from collections.abc import Mapping

import numpy as np

from dspsim.kernels.dtypes import DTYPES
from dspsim.kernels.param import Param
from dspsim.sim.errors import KernelDeclarationError

#: A stem is the middle of ``{prefix}_{stem}_{s|p}``: a C identifier in lower case.
STEM = re.compile(r"[a-z][a-z0-9_]*[a-z0-9]|[a-z]")
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: C types a scalar parameter may have ("element": the call's element type).
PARAM_C_TYPES = ("float", "double", "int", "element")
PARAM_ROLES = ("scale", "threshold")
#: Arguments every operator has, which are no operand and no parameter.
RESERVED = ("length", "core_mask")
#: Elements the formula probe runs on.
PROBE_ELEMENTS = 8


def _fail(op_name: str, field: str, problem: str) -> KernelDeclarationError:
    return KernelDeclarationError(f"operator {op_name!r}: field {field}: {problem}")


def _names(op_name: str, field: str, value) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, (tuple, list)):
        raise _fail(op_name, field, f"{value!r:.60} must be a tuple of argument names, "
                    f"e.g. ('src0', 'src1')")
    for name in value:
        if not isinstance(name, str) or not IDENTIFIER.fullmatch(name):
            raise _fail(op_name, field, f"{name!r:.60} is not a C identifier")
    if len(set(value)) != len(value):
        twice = next(n for n in value if list(value).count(n) > 1)
        raise _fail(op_name, field, f"{twice!r} appears twice")
    return tuple(value)


def _check_param(op_name: str, index: int, param) -> None:
    where = f"params[{index}]"
    if not isinstance(param, Param):
        raise _fail(op_name, where, f"{param!r:.60} must be a dspsim.kernels.Param")
    where = f"params[{index}] ({param.name!r:.40})"
    if not isinstance(param.name, str) or not IDENTIFIER.fullmatch(param.name) or \
            param.name in RESERVED:
        raise _fail(op_name, f"params[{index}].name", f"{param.name!r:.60} must be a C "
                    f"identifier other than {' and '.join(RESERVED)}")
    bounds = {}
    for field in ("default", "minimum", "maximum"):
        value = getattr(param, field)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or \
                not math.isfinite(value):
            raise _fail(op_name, f"{where}.{field}", f"{value!r:.60} must be a finite number "
                        f"or None")
        bounds[field] = float(value)
    low, high = bounds.get("minimum", -math.inf), bounds.get("maximum", math.inf)
    if low > high:
        raise _fail(op_name, f"{where}.minimum", f"{low:g} is above maximum {high:g}")
    if "default" in bounds and not low <= bounds["default"] <= high:
        raise _fail(op_name, f"{where}.default", f"{bounds['default']:g} is outside the "
                    f"parameter's range [{low:g}, {high:g}]")
    if param.role not in PARAM_ROLES:
        raise _fail(op_name, f"{where}.role", f"{param.role!r:.60} must be one of "
                    f"{', '.join(PARAM_ROLES)} (scale: multiplied in the element type; "
                    f"threshold: only compared against)")
    if param.c_type not in PARAM_C_TYPES:
        raise _fail(op_name, f"{where}.c_type", f"{param.c_type!r:.60} must be one of "
                    f"{', '.join(PARAM_C_TYPES)}")


def _check_mix(op_name: str, mix) -> None:
    if not isinstance(mix, Mapping) or not mix:
        raise _fail(op_name, "mix", f"{mix!r:.60} must be a non-empty mapping of vector "
                    f"instruction names to counts per iteration, e.g. {{'load': 2, 'mul': 1, "
                    f"'store': 1}}")
    for instruction, count in mix.items():
        if not isinstance(instruction, str) or not IDENTIFIER.fullmatch(instruction):
            raise _fail(op_name, "mix", f"instruction {instruction!r:.60} is not a name")
        if isinstance(count, bool) or not isinstance(count, (int, np.integer)) or count < 0:
            raise _fail(op_name, f"mix[{instruction!r}]", f"{count!r:.60} must be a whole "
                        f"number >= 0 of instructions per vector iteration")
    if not any(mix.values()):
        raise _fail(op_name, "mix", "every count is 0: an iteration must issue something")


def check_declaration(op) -> None:
    """A KernelDeclarationError naming the first malformed field of ``op`` (an
    :class:`~dspsim.kernels.Operator`), if any."""
    stem = op.stem
    if not isinstance(stem, str) or not STEM.fullmatch(stem):
        raise _fail(str(stem)[:40], "stem", f"{stem!r:.60} must be a C name stem in lower case "
                    f"(letters, digits, underscores; e.g. 'bias_gelu_grad'): the C names are "
                    f"<fp|hp|bf>_<stem>_<s|p>")
    for field in ("summary", "formula"):
        if not isinstance(getattr(op, field), str):
            raise _fail(stem, field, "must be a string")
    args = _names(stem, "args", op.args)
    if "core_mask" in args:
        raise _fail(stem, "args", "leave out core_mask: the shared-storage version adds it")
    if "length" not in args:
        raise _fail(stem, "args", "must include 'length', the element count")
    inputs = _names(stem, "inputs", op.inputs)
    if not inputs:
        raise _fail(stem, "inputs", "must name at least one input operand")
    if not isinstance(op.output, str) or op.output not in args:
        raise _fail(stem, "output", f"{op.output!r:.60} must be one of args {args}")
    if op.output in inputs:
        raise _fail(stem, "output", f"{op.output!r} is also an input; an in-place call "
                    f"passes the same address for both")
    if isinstance(op.params, (str, bytes)) or not isinstance(op.params, (tuple, list)):
        raise _fail(stem, "params", f"{op.params!r:.60} must be a tuple of Param")
    for index, param in enumerate(op.params):
        _check_param(stem, index, param)
    params = [p.name for p in op.params]
    for name in inputs + tuple(params):
        if name not in args:
            raise _fail(stem, "args", f"does not list {name!r}; args are the C arguments in "
                        f"order: every input, the output, 'length' and every parameter")
    operands = set(inputs) | {op.output}
    clash = (operands & set(params)) | ((operands | set(params)) & set(RESERVED))
    if clash:
        raise _fail(stem, "params", f"{sorted(clash)[0]!r} is both an operand and a "
                    f"parameter, or an operand named like a reserved argument")
    extra = [a for a in args if a not in set(inputs) | {op.output, "length", *params}]
    if extra:
        raise _fail(stem, "args", f"{extra[0]!r} is neither an input, the output, 'length' "
                    f"nor a parameter")
    _check_mix(stem, op.mix)
    for field in ("compute", "reference"):
        if not callable(getattr(op, field)):
            raise _fail(stem, field, "must be a function of the inputs (in C order) and the "
                        "parameters (by name) returning an array")
    for field in ("error_bound", "sample"):
        if getattr(op, field) is not None and not callable(getattr(op, field)):
            raise _fail(stem, field, "must be a function or None")
    ulps = op.tolerance_ulps
    if isinstance(ulps, bool) or not isinstance(ulps, (int, float)) or not \
            (math.isfinite(ulps) and ulps >= 0):
        raise _fail(stem, "tolerance_ulps", f"{ulps!r:.60} must be a finite number >= 0")
    if op.linear_in is not None and op.linear_in not in inputs:
        raise _fail(stem, "linear_in", f"{op.linear_in!r:.60} is not an input")
    if op.dtypes is not None and (
            isinstance(op.dtypes, str) or not isinstance(op.dtypes, (tuple, list))
            or not op.dtypes or any(d not in DTYPES for d in op.dtypes)):
        raise _fail(stem, "dtypes", f"{op.dtypes!r:.60} must be None (every dtype) or a "
                    f"non-empty tuple of {', '.join(map(repr, DTYPES))}")


def _call(op_name: str, field: str, function, *args, **kwargs):
    try:
        with np.errstate(all="ignore"):
            return function(*args, **kwargs)
    except Exception as exc:  # the user's formula: whatever it raises is its problem
        raise _fail(op_name, field, f"raised {type(exc).__name__}: {str(exc)[:200]} when "
                    f"run on {PROBE_ELEMENTS} elements") from exc


def _array(op_name: str, field: str, value, length: int) -> np.ndarray:
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise _fail(op_name, field, f"returned {type(value).__name__}, not an array of "
                    f"numbers") from None
    if array.shape not in ((length,), ()):
        raise _fail(op_name, field, f"returned shape {array.shape} for {length} elements; an "
                    f"elementwise formula returns one value per element")
    return array


def probe_formulas(op) -> None:
    """Run the declaration's functions on a few elements; a KernelDeclarationError naming
    the function that raises or returns something other than one value per element."""
    stem = op.stem
    rng = np.random.default_rng(0)
    if op.sample is not None:
        drawn = _call(stem, "sample", op.sample, rng, PROBE_ELEMENTS)
        if not isinstance(drawn, Mapping) or set(drawn) != set(op.inputs):
            raise _fail(stem, "sample", f"must return a dict with one array per input "
                        f"{op.inputs}, got {type(drawn).__name__}")
        for name in op.inputs:
            _array(stem, f"sample[{name!r}]", drawn[name], PROBE_ELEMENTS)
    inputs = op.random_inputs(rng, PROBE_ELEMENTS)
    params = {p.name: p.default if p.default is not None else
              (p.minimum if p.minimum is not None else
               (p.maximum if p.maximum is not None else 1.0)) for p in op.params}
    dtype = DTYPES[op.dtypes[0] if op.dtypes else "fp32"]
    narrow = [np.asarray(inputs[n], np.float64).astype(dtype.numpy) for n in op.inputs]
    wide = [np.asarray(inputs[n], np.float64) for n in op.inputs]
    _array(stem, "compute", _call(stem, "compute", op.compute, *narrow, **params),
           PROBE_ELEMENTS)
    _array(stem, "reference", _call(stem, "reference", op.reference, *wide, **params),
           PROBE_ELEMENTS)
    if op.error_bound is not None:
        eps = dtype.ulp_at_one
        _array(stem, "error_bound", _call(stem, "error_bound", op.error_bound, eps, 0.0, *wide,
                                          **params), PROBE_ELEMENTS)
