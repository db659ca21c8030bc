"""Max-min fair bandwidth sharing between flows."""
import pytest
import simpy

from dspsim.sim.engine.network import Flow, FlowNetwork, Link, max_min_rates


def flows_on(*specs):
    env = simpy.Environment()
    return [Flow(100, links, cap, env.event()) for links, cap in specs]


def test_equal_share_of_a_bottleneck():
    ddr = Link("ddr", 9.0)
    flows = flows_on(((ddr,), 10), ((ddr,), 10), ((ddr,), 10))
    max_min_rates(flows)
    assert [f.rate for f in flows] == pytest.approx([3, 3, 3])


def test_capped_flow_leaves_its_share_to_others():
    ddr = Link("ddr", 9.0)
    flows = flows_on(((ddr,), 1), ((ddr,), 10), ((ddr,), 10))
    max_min_rates(flows)
    assert [f.rate for f in flows] == pytest.approx([1, 4, 4])


def test_two_bottlenecks():
    ddr, port = Link("ddr", 10.0), Link("port", 2.0)
    flows = flows_on(((ddr, port), 10), ((ddr, port), 10), ((ddr,), 10))
    max_min_rates(flows)
    assert [f.rate for f in flows] == pytest.approx([1, 1, 8])


def test_completion_times_follow_rate_changes():
    env = simpy.Environment()
    net = FlowNetwork(env)
    ddr = Link("ddr", 2.0)
    done = {}

    def send(name, delay, nbytes):
        yield env.timeout(delay)
        yield net.transfer(nbytes, (ddr,), 10.0)
        done[name] = env.now

    env.process(send("a", 0, 100))  # alone at 2 B/cycle until t=20, then shares
    env.process(send("b", 20, 40))  # 1 B/cycle each: b done at t=60; a has 20 left
    env.run()
    assert done == pytest.approx({"b": 60, "a": 70})
    assert ddr.bytes_moved == 140
