"""Instructions a chip has no unit for: the cost follows from their expansion, at both
fidelities, because the mix is expanded once, in vector_cost."""
import copy

import pytest
import yaml

import dspsim
from dspsim import ConfigError, kernels
from dspsim.sim.chip.load import config_from_dict, packaged_chips
from dspsim.sim.engine.vector import vector_cost


def raw(name="ft78ne"):
    with open(packaged_chips()[name]) as handle:
        return yaml.safe_load(handle)


@pytest.mark.parametrize("stem", list(kernels.OPERATORS))
def test_an_expanded_mix_costs_what_its_written_out_instructions_cost(stem):
    config = dspsim.Chip("ft78ne").config
    mix = kernels.OPERATORS[stem].mix
    written_out = config.vector.expand(mix)
    assert all(config.vector.instructions[name].issues for name in written_out)
    expanded, direct = vector_cost(config, "fp32", mix), vector_cost(config, "fp32", written_out)
    assert dict(expanded.mix) == dict(direct.mix) == written_out
    assert expanded.unit_cycles == direct.unit_cycles
    assert expanded.iteration_cycles == direct.iteration_cycles
    assert expanded.l2_cycles == direct.l2_cycles


def test_issue_bound_of_an_expansion_by_hand():
    # div on FT78NE: rcp 4 + 2 sub + 2 abs + 3 cmp + 1 bitop + 2 select = 14 cycles of alu
    # work on 2 alu units; 5 mul on 2 mul units
    cost = vector_cost(dspsim.Chip("ft78ne").config, "fp32", {"div": 1})
    assert cost.unit_cycles == {"alu": 7.0, "mul": 2.5, "ldst": 0.0}
    assert cost.iteration_cycles == 7.0 and cost.bounding_unit == "alu"


def _chip_with_exp(expand):
    data = copy.deepcopy(raw())
    data["vector"]["instructions"]["exp"] = {"expand": expand}
    return dspsim.Chip(config_from_dict(data, "exp-variant.yaml"))


def _private_cycles(chip, name, length, fidelity):
    src0, src1, dst = chip.config.example_addresses.private[:3]
    chip.zero(src0, length, "fp32")
    chip.zero(src1, length, "fp32")
    return chip.call(name, src0, src1, dst, length, numerics=False, fidelity=fidelity).cycles


@pytest.mark.parametrize("name", ["fp_elu_grad_p", "fp_gelu_grad_p", "fp_softplus_grad_p"])
def test_both_fidelities_see_the_expansion(name):
    cheap = _chip_with_exp({"mul": 2, "add": 2})
    dear = _chip_with_exp({"mul": 12, "add": 12, "cvt": 6, "lookup": 2})
    for length in (1000, 4099):
        fast = [_private_cycles(c, name, length, "fast") for c in (cheap, dear)]
        detailed = [_private_cycles(c, name, length, "detailed") for c in (cheap, dear)]
        assert fast[1] > fast[0] and detailed[1] > detailed[0]
        for f, d in zip(fast, detailed, strict=True):
            assert abs(d - f) <= 0.03 * f, (name, length, f, d)


def test_a_kernel_instruction_the_chip_lacks_says_how_to_add_it():
    data = copy.deepcopy(raw())
    del data["vector"]["instructions"]["exp"]
    data["vector"]["instructions"]["tanh"]["expand"].pop("exp")
    config = config_from_dict(data, "no-exp.yaml")
    with pytest.raises(ConfigError, match="no 'exp'.*expand"):
        vector_cost(config, "fp32", kernels.OPERATORS["elu_grad"].mix)
