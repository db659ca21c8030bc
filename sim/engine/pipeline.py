"""The tile pipeline of a call: launch, each core's double-buffered pipeline, barrier.

Shared-storage jobs split ``length`` over the selected cores into balanced contiguous
parts; each core runs a double-buffered pipeline in which loading tile i+1, computing
tile i and storing tile i-1 overlap. Loads and stores are DMA transfers on the DMA engines
the core reaches, sharing DDR / shared SRAM and the core's L2 port with every other
transfer in flight on the timeline (other cores of the call, and other calls).

Private-storage jobs run on one core straight from its L2: vector work only.

The pipeline is written as callbacks on SimPy events rather than as SimPy processes: a
process costs several events per step, a callback one. Both fidelities use it; they differ
only in the datapath (:mod:`dspsim.sim.engine.datapath`, :mod:`dspsim.sim.engine.detailed`)
that times a transfer and a tile's vector work.
"""
from __future__ import annotations

from collections.abc import Callable

from dspsim.sim.engine.job import Operand
from dspsim.sim.engine.model import COMPUTE, LOAD, STORE, CoreGroup, Model
from dspsim.sim.engine.pool import Engine


class _TileTransfer:
    """One operand's tile moved by one DMA engine: set up, wait for an engine, move.

    The setup (programming the transfer and submitting it) is latency before the
    transfer asks for an engine, not engine time: an engine is held only while it moves
    data, as a transfer controller works through requests submitted to it. A transfer
    issued while its direction's previous tile is still on its way sets up meanwhile and
    asks for an engine once that tile has arrived (see :class:`_Move`).
    """

    __slots__ = ("move", "pipeline", "thread", "operand", "tile", "nbytes", "engine",
                 "started", "granted", "set_up")

    def __init__(self, move: _Move, thread: str, operand: Operand, tile: int,
                 nbytes: int) -> None:
        self.move = move
        self.pipeline = move.pipeline  # read at every step of the transfer
        self.thread = thread
        self.operand = operand
        self.tile = tile
        self.nbytes = nbytes
        self.engine: Engine | None = None  # the engine that moves it, once granted
        self.started = 0.0  # issued, or (if later) when its direction was free for it
        self.granted = 0.0  # when an engine took it: its data moves from then on
        self.set_up = False

    def start(self) -> None:
        model = self.pipeline.model
        self.started = model.env.now
        self.pipeline.in_flight.append(self)
        model.after(model.config.dma.setup_cycles, self._set_up)

    def _set_up(self, _event) -> None:
        self.set_up = True
        if not self.move.behind:
            self.request()

    def request(self) -> None:
        """Ask the core's pool for an engine."""
        pipeline = self.pipeline
        pipeline.model.pools[pipeline.group.core].request(
            pipeline.group.core, self.operand.span.region, self.nbytes, self._granted)

    def _granted(self, engine: Engine) -> None:
        pipeline = self.pipeline
        self.engine = engine
        self.granted = pipeline.model.env.now
        pipeline.datapath.transfer(pipeline.group, self.move.direction, self.operand,
                                   self.nbytes, engine.rate, self._moved)

    def _moved(self, _event=None) -> None:
        pipeline, engine = self.pipeline, self.engine
        assert engine is not None, "a transfer moves only once an engine was granted"
        model, group = pipeline.model, pipeline.group
        ledger = model.bytes_read if self.move.direction == LOAD else model.bytes_written
        ledger[self.operand.span.region] += self.nbytes * group.weight
        now = model.env.now
        if model.log is not None:
            model.log.transfer(group, self.thread, self.operand, self.tile, self.started, now,
                               engine.name, self.granted)
        pipeline.in_flight.remove(self)
        model.pools[group.core].release(engine)
        self.move.one_done()


class _Move:
    """One direction's transfers of one tile: done when its last operand has arrived.

    A direction's tiles move one after the other, in order: a program issues the next
    tile's transfers as soon as a buffer is free for them, before it waits for the tile
    on its way, so their setups pass while that tile moves; they ask for engines once it
    has arrived. A move (and each of its slices in the trace) begins when its direction
    is free for it, so a thread's slices never overlap.
    """

    __slots__ = ("pipeline", "direction", "waiting", "started", "then", "transfers",
                 "behind", "next")

    def __init__(self, pipeline: _Pipeline, direction: str, operands: int,
                 then: Callable, behind: bool) -> None:
        self.pipeline = pipeline
        self.direction = direction
        self.waiting = operands
        self.started = pipeline.model.env.now
        self.then = then
        self.transfers: list[_TileTransfer] = []
        self.behind = behind  # the direction's previous tile has not arrived yet
        self.next: _Move | None = None  # the direction's next tile, issued behind this one

    def one_done(self) -> None:
        self.waiting -= 1
        if not self.waiting:
            pipeline = self.pipeline
            pipeline.moves.remove(self)
            now = pipeline.model.env.now
            # busy: while any of the direction's transfers was in flight
            pipeline.group.busy[self.direction] += now - self.started
            following = self.next
            if following is None:
                del pipeline.last_move[self.direction]
            self.then()
            if following is not None:
                following.direction_free(now)

    def direction_free(self, now: float) -> None:
        """The direction's previous tile has arrived: the transfers set up ask for
        engines, the others will once set up."""
        self.behind = False
        self.started = max(self.started, now)
        for transfer in self.transfers:
            transfer.started = max(transfer.started, now)
            if transfer.set_up:
                transfer.request()


class _Pipeline:
    """The double-buffered load / compute / store pipeline of one core group.

    Two input buffers and two output buffers: loading tile i+1 may start once tile i-1's
    inputs are consumed; computing tile i needs its inputs loaded and a free output
    buffer; storing tile i frees its output buffer. A load or store is issued as soon as
    its buffer allows, even while the previous one of its direction is on its way: its
    setup then overlaps that transfer (see :class:`_TileTransfer`).
    """

    def __init__(self, model: Model, datapath, group: CoreGroup, then: Callable) -> None:
        self.model = model
        # told of every tile computed (tile_computed(pipeline)): the steady state that
        # skips periods, the cutoff that stops a tile-search candidate (see run_shared)
        self.watchers: tuple = ()
        self.in_flight: list[_TileTransfer] = []
        # each direction's newest move not yet arrived: the next one waits behind it
        self.last_move: dict[str, _Move] = {}
        self.moves: list[_Move] = []
        self.datapath = datapath
        self.group = group
        self.tiles = group.tiles
        self.then = then
        self.free_inputs, self.loaded, self.free_outputs, self.computed = 2, 0, 2, 0
        # the next tile to issue a load for, to compute, to issue a store for; tiles stored
        self.next_load = self.next_compute = self.next_store = self.stored = 0
        self.computing = False
        self.compute_started = 0.0
        for member in group.members:
            member.tiles = len(self.tiles)

    def start(self, _event=None) -> None:
        self._try_load()

    def _move(self, direction: str, index: int, then: Callable) -> None:
        """Move tile ``index`` of every operand in ``direction``, then call ``then()``.

        Each operand's tile is its own transfer and asks for its own engine, so the
        operands move side by side as far as the core's (or the pool's) engines allow.
        Operand k's tiles always show on thread ``direction.k``: one after the other,
        never overlapping.
        """
        job = self.model.job
        operands = job.inputs if direction == LOAD else job.outputs
        first, stop = self.tiles[index]
        nbytes = (stop - first) * job.itemsize
        previous = self.last_move.get(direction)
        move = _Move(self, direction, len(operands), then, behind=previous is not None)
        if previous is not None:
            previous.next = move
        self.last_move[direction] = move
        self.moves.append(move)
        for k, operand in enumerate(operands):
            thread = direction if len(operands) == 1 else f"{direction}.{k}"
            move.transfers.append(_TileTransfer(move, thread, operand, index, nbytes))
        for transfer in move.transfers:
            transfer.start()

    # loader
    def _try_load(self) -> None:
        while self.next_load < len(self.tiles) and self.free_inputs:
            self.free_inputs -= 1
            self.next_load += 1
            self._move(LOAD, self.next_load - 1, self._loaded)

    def _loaded(self, _event=None) -> None:
        # a direction's moves arrive in tile order: each operand's transfers do
        self.loaded += 1
        self._try_compute()
        self._try_load()

    # vector core
    def _try_compute(self) -> None:
        if self.computing or not self.loaded or not self.free_outputs:
            return
        self.computing = True
        self.loaded -= 1
        self.free_outputs -= 1
        self.compute_started = self.model.env.now
        first, stop = self.tiles[self.next_compute]
        self.datapath.compute(self.group, stop - first, self._computed)

    def _computed(self, _event=None) -> None:
        now = self.model.env.now
        self.group.busy[COMPUTE] += now - self.compute_started
        if self.model.log is not None:
            self.model.log.compute(self.group, self.next_compute, self.compute_started, now)
        self.computing = False
        self.next_compute += 1
        self.free_inputs += 1
        self.computed += 1
        # the store first: it frees the output buffer the vector unit needs next, while
        # the load it would compete with is for a tile that is not needed before then
        self._try_store()
        self._try_load()
        self._try_compute()
        for watcher in self.watchers:
            watcher.tile_computed(self)

    # storer
    def _try_store(self) -> None:
        while self.computed:
            self.computed -= 1
            self.next_store += 1
            self._move(STORE, self.next_store - 1, self._stored)

    def _stored(self, _event=None) -> None:
        self.stored += 1
        self.free_outputs += 1
        if self.stored == len(self.tiles):
            for member in self.group.members:
                member.finish = self.model.env.now
            self.then()
            return
        self._try_compute()
        self._try_store()


def run_shared(model: Model, datapath, groups: list[CoreGroup], stagger: float = 0.0,
               then: Callable = lambda: None, watch: tuple[Callable, ...] = ()) -> None:
    """Launch, every core group's pipeline (the k-th ``k * stagger`` cycles after the
    launch), barrier; then call ``then()``.

    Each of ``watch`` is called with the pipelines and returns what they tell of every
    tile computed: the :class:`~dspsim.sim.engine.steady.SteadyState` that advances their
    periodic part in closed form, the :class:`~dspsim.sim.engine.cutoff.Cutoff` that stops
    a tile-search candidate once it cannot win."""
    env, cfg, log = model.env, model.config, model.log
    running = [len(groups)]
    origin = model.origin

    barrier_start = [0.0]

    def barrier_done(_event):
        if log is not None:
            log.call("barrier", barrier_start[0], env.now, cfg.barrier_cycles)
        then()

    def one_core_done(_event=None):
        running[0] -= 1
        if not running[0]:
            barrier_start[0] = env.now
            model.after(cfg.barrier_cycles, barrier_done)

    def launched(_event):
        if log is not None:
            log.call("launch", origin, env.now, cfg.launch_cycles)
        pipelines = [_Pipeline(model, datapath, group, one_core_done) for group in groups]
        watchers = tuple(make(pipelines) for make in watch)
        for pipeline in pipelines:
            pipeline.watchers = watchers
        for index, pipeline in enumerate(pipelines):
            if stagger and index:
                model.after(index * stagger, pipeline.start)
            else:
                pipeline.start()

    model.after(cfg.launch_cycles, launched)


def run_private(model: Model, datapath, group: CoreGroup,
                then: Callable = lambda: None) -> None:
    """The vector loop over the whole range, straight from the core's L2; then ``then()``."""
    member = group.members[0]
    origin = model.origin

    def done(_event=None):
        now = model.env.now
        group.busy[COMPUTE] += now - origin
        member.finish = now
        if model.log is not None:
            model.log.compute(group, None, origin, now)
        then()

    member.tiles = 1
    datapath.compute(group, member.elements, done)
