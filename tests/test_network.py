"""Max-min fair bandwidth sharing between flows."""
import pytest
import simpy
from hypothesis import given, settings
from hypothesis import strategies as st

from dspsim.sim.engine import network
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


# Networks remember the rates of every mix of routes they meet, for the whole process, and
# also up to which port (a route's last link) is which: a network whose cores' ports carry
# the same loads as another's, in another order, reads its rates from what the other
# computed. They must be, to the last bit, the rates water-filling gives it afresh.
CAPS = st.sampled_from([0.5, 2.0, 3.0, 16.0])


@settings(max_examples=60, deadline=None)
@given(ports=st.integers(min_value=1, max_value=4),
       flows=st.lists(st.tuples(st.integers(min_value=0, max_value=3),
                                st.integers(min_value=0, max_value=1), CAPS,
                                st.integers(min_value=1, max_value=3)),
                      min_size=1, max_size=8),
       shuffle=st.randoms(use_true_random=False))
def test_remembered_rates_are_the_rates_water_filling_gives(ports, flows, shuffle):
    def rates(relabel, order):
        env = simpy.Environment()
        ddr, sram = Link("ddr", 9.0), Link("shared_sram", 7.0)
        net = FlowNetwork(env, watched=ddr)
        port_links = [Link(f"port {k}", 4.0) for k in range(ports)]
        for index in order:
            port, region, cap, weight = flows[index]
            links = ((ddr, sram)[region], port_links[relabel[port % ports]])
            net.start(100.0, links, cap, lambda: None, (weight, 1))
        started = list(net.flows)
        fresh = [Flow(100.0, f.links, f.cap, None, f.shares) for f in started]
        max_min_rates(fresh)
        return [f.rate for f in started], [f.rate for f in fresh]

    relabel, order = list(range(ports)), list(range(len(flows)))
    for _ in range(3):  # the same mix, its ports met in other orders and relabelled
        remembered, afresh = rates(relabel, order)
        assert remembered == afresh  # exactly: alike ports get alike rates to the bit
        shuffle.shuffle(relabel)
        shuffle.shuffle(order)


def test_remembered_rates_stay_bounded(monkeypatch):
    monkeypatch.setattr(network, "_RATES_LIMIT", 4)
    env = simpy.Environment()
    net = FlowNetwork(env)
    ddr = Link("ddr", 9.0)
    for cap in range(1, 40):
        net.start(100.0, (ddr, Link("port", 4.0)), float(cap), lambda: None)
    assert len(network._RATES_BY_MIX) <= 5
    assert len(network._RATES_BY_SYMMETRIC_MIX) <= 5
    assert len(network._ROUTE_NUMBERS) <= 5
