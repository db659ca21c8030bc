"""Shared fixtures: fresh chips and reproducible inputs."""
import numpy as np
import pytest

import dspsim


@pytest.fixture
def ft78ne():
    return dspsim.Chip("ft78ne")


@pytest.fixture
def mt7004():
    return dspsim.Chip("mt7004")


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
