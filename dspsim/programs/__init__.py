"""Programs: many operator calls on streams of one chip, run on one shared timeline.

``prog = chip.program()``, ``s = prog.stream()``, operators as stream methods with their
C signatures, ``s.record()`` / ``s.wait(event)``, ``prog.run()`` -> :class:`ProgramResult`.
Program files (YAML) describe the same: :func:`load_program`.
"""
from dspsim.programs.program import EnqueuedCall, Event, Program, Stream
from dspsim.programs.result import CallRecord, ProgramResult
from dspsim.sim.program.graph import DeadlockError, RaceError

__all__ = ["CallRecord", "DeadlockError", "EnqueuedCall", "Event", "Program", "ProgramResult",
           "RaceError", "Stream"]
