"""The hardware model: chip config, memory, DMA and bandwidth sharing, vector cores, the
tile pipeline and tracing. It knows no operator by name: it runs Jobs."""
from dspsim.sim.config import DTYPE_BITS, ChipConfig, load_config
from dspsim.sim.job import Job, Operand
from dspsim.sim.machine import Timing, run_job
from dspsim.sim.memory import Memory, Span

__all__ = ["DTYPE_BITS", "ChipConfig", "load_config", "Job", "Operand", "Timing", "run_job",
           "Memory", "Span"]
