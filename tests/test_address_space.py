"""A process whose address space is limited below a chip's DDR gets a CapacityError."""
from __future__ import annotations

import os
import resource
import subprocess
import sys

import pytest

LIMIT_BYTES = 2_000_000 * 1024  # `ulimit -v 2000000`


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="sets a POSIX resource limit")
def test_run_under_an_address_space_limit_names_it_and_the_fix():
    proc = subprocess.run([sys.executable, "-m", "dspsim", "run", "fp_relu_grad_s",
                           "--length", "10", "--no-trace"], capture_output=True, text=True,
                          preexec_fn=_limited, timeout=300)
    assert proc.returncode == 2, proc.stdout
    assert "Traceback" not in proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert "2,147,483,648 bytes of host address space" in line
    assert "ulimit -v 2,000,000 KiB" in line and "ulimit -v unlimited" in line
