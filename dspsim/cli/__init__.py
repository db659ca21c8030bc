"""The ``dspsim`` command line: ``run``, ``chips``, ``ops``, ``sweep`` and ``trace``."""
from dspsim.cli.main import main

__all__ = ["main"]
