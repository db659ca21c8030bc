"""The exception hierarchy of dspsim.

Every problem the simulator reports is a :class:`DspSimError`; the subclasses say which
kind of input was wrong so that callers can catch exactly what they can handle. Messages
name the offending value and say how to fix it.
"""


class DspSimError(Exception):
    """Root of every error dspsim raises on purpose."""


class ConfigError(DspSimError):
    """A chip description (YAML) is missing, malformed or inconsistent."""


class AddressError(DspSimError):
    """An address or address range does not fit the chip's memory map."""


class DTypeError(DspSimError):
    """A data type the chip (or the operator) does not support."""


class ArgumentError(DspSimError):
    """A call argument is out of range or inconsistent with the others."""


class CapacityError(DspSimError):
    """Operands or buffers do not fit the memory they must live in."""


class KernelDeclarationError(DspSimError, ValueError):
    """An operator declaration (a user's kernel file, an entry point) is malformed; the
    message names the file, the operator and the field."""
