"""The hardware model: chip config, memory, DMA and bandwidth sharing, vector cores, the
tile pipeline and tracing, in two fidelities (fast, detailed). It knows no operator by
name: it runs Jobs."""
from dspsim.sim.chip.load import DTYPE_BITS, ChipConfig, load_config
from dspsim.sim.engine.job import Job, Operand
from dspsim.sim.engine.machine import FIDELITIES, Timing, run_job
from dspsim.sim.memory import Memory, Span

__all__ = ["DTYPE_BITS", "ChipConfig", "load_config", "Job", "Operand", "FIDELITIES", "Timing",
           "run_job", "Memory", "Span"]
