"""Simulated memory: lazy storage, address resolution and its errors."""
import resource

import numpy as np
import pytest

from dspsim import AddressError


def test_write_read_roundtrip_at_seed_addresses(ft78ne):
    data = np.arange(1024, dtype=np.float32)
    ft78ne.write(0xA0000000, data)
    assert np.array_equal(ft78ne.read(0xA0000000, 1024, np.float32), data)
    assert np.array_equal(ft78ne.read(0xA0000010, 2, "fp32"), data[4:6])


def test_two_gib_ddr_costs_nothing_until_written(ft78ne):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    import dspsim
    chips = [dspsim.Chip("ft78ne") for _ in range(4)]
    chips[0].write(0xFFFFFF00, np.ones(64, np.float32))  # the last bytes of DDR
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert after - before < 64 * 1024  # KiB: far below one 2 GiB DDR


def test_reading_never_written_bytes_is_an_error(ft78ne):
    ft78ne.write(0xA0000000, np.ones(8, np.float32))
    with pytest.raises(AddressError, match="never written"):
        ft78ne.read(0xA0000000, 9, np.float32)
    with pytest.raises(AddressError, match=r"\[0xa0000020, 0xa0000024\)"):
        ft78ne.read(0xA0000000, 9, np.float32)


def test_address_outside_every_region(ft78ne):
    with pytest.raises(AddressError, match="outside every memory region.*memory map.*ddr"):
        ft78ne.write(0x40000000, np.ones(4, np.float32))


def test_range_crossing_region_end(ft78ne):
    with pytest.raises(AddressError, match="past the end of ddr"):
        ft78ne.write(0xFFFFFFF8, np.ones(4, np.float32))
    with pytest.raises(AddressError, match="past the end of core 0's l2"):
        ft78ne.write(0x1087FFF0, np.ones(8, np.float32))


def test_misaligned_address(ft78ne):
    with pytest.raises(AddressError, match="not aligned to 4 bytes"):
        ft78ne.write(0xA0000002, np.ones(4, np.float32))
    ft78ne.write(0xA0000002, np.ones(4, np.float16))  # 2-byte aligned is fine for fp16


def test_l2_global_and_local_alias_name_the_same_bytes(ft78ne):
    ft78ne.write(0x10810000, np.arange(4, dtype=np.float32))  # core 0 global
    assert np.array_equal(ft78ne.read(0x00810000, 4, np.float32), np.arange(4))
    ft78ne.write(0x12810000, np.full(4, 7, np.float32))  # core 2 global
    assert np.array_equal(ft78ne.read(0x00810000, 4, np.float32, core=2), np.full(4, 7))


def test_mt7004_l2_is_local_to_each_core(mt7004):
    mt7004.write(0x10000000, np.ones(4, np.float32), core=1)
    with pytest.raises(AddressError, match="never written"):
        mt7004.read(0x10000000, 4, np.float32)  # core 0's L2
    assert mt7004.read(0x10000000, 4, np.float32, core=1).sum() == 4


def test_zero_on_fresh_memory_costs_nothing_and_reads_zeros(ft78ne):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    ft78ne.zero(0x80000000, 1 << 28, np.float32)  # 1 GiB of DDR
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert after - before < 64 * 1024  # KiB
    assert not ft78ne.read(0x80000000 + (1 << 29), 16, np.float32).any()


def test_zero_clears_bytes_that_held_data(ft78ne):
    ft78ne.write(0xA0000010, np.full(4, 3.0, np.float32))
    ft78ne.zero(0xA0000000, 16, "fp32")
    assert not ft78ne.read(0xA0000000, 16, np.float32).any()


def test_zero_checks_like_write(ft78ne):
    with pytest.raises(AddressError, match="not aligned"):
        ft78ne.zero(0xA0000002, 4, np.float32)
    with pytest.raises(AddressError, match="past the end of ddr"):
        ft78ne.zero(0xFFFFFFF8, 4, np.float32)
