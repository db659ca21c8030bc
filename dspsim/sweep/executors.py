"""Where the runs of a sweep execute: this process, local worker processes, or a Dask cluster.

Every executor offers the same two operations: :meth:`Executor.map_unordered`, which
yields ``(item, fn(item))`` as each task finishes (in completion order), and
:meth:`Executor.close`. The sweep driver only talks to this interface, so a study runs
the same way on a laptop and on a cluster. ``fn`` and the items must be picklable
(a module-level function and plain data) for the process and Dask executors.

Dask is optional: it is imported only when a scheduler address is given, and its absence
is reported with the install command (``pip install 'dspsim[distributed]'``).
"""
from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from dspsim.sim.errors import ArgumentError

DISTRIBUTED_HINT = "pip install 'dspsim[distributed]'"


class Executor:
    """Runs ``fn(item)`` for many items; subclasses decide where."""

    #: One line saying where tasks run, for the progress display.
    description = "executor"
    #: What the user should know about where the tasks run (the sweep reports them).
    notes: tuple[str, ...] = ()

    def map_unordered(self, fn: Callable[[Any], Any], items: Iterable[Any]
                      ) -> Iterator[tuple[Any, Any]]:
        """Yield ``(item, fn(item))`` for every item, as each finishes.

        An exception raised by ``fn`` propagates out of the iteration; tasks not yet
        started are then cancelled. Closing the iterator early also cancels them.
        """
        raise NotImplementedError

    def close(self) -> None:
        """Release workers and connections."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class SerialExecutor(Executor):
    """Runs every task in the calling process, one after the other (``--workers 1``)."""

    description = "in this process"

    def map_unordered(self, fn, items):
        for item in items:
            yield item, fn(item)


def _worker_setup() -> None:
    """Prepare a worker process: ignore Ctrl-C, and end with the sweep that started it."""
    # Ctrl-C reaches the whole process group; the driver alone decides how to stop, so
    # workers must not die with their own KeyboardInterrupt tracebacks.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # A worker holds both ends of its task queue, so a driver killed outright (SIGKILL,
    # OOM killer) never shows up as end-of-file: the worker would wait for tasks forever.
    # Watch the parent's sentinel instead and leave as soon as it is gone.
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=_exit_with, args=(parent.sentinel,), daemon=True,
                         name="dspsim-parent-watch").start()


def _exit_with(sentinel: int) -> None:
    multiprocessing.connection.wait([sentinel])
    os._exit(1)  # the driver is gone: nobody will read this worker's results


class ProcessExecutor(Executor):
    """Runs tasks in ``workers`` local processes (``--workers N``).

    Workers are started with ``spawn``: a fresh interpreter per worker is slower to start
    than ``fork`` but safe whatever threads the parent runs (progress display, Dask).
    At most ``2 × workers`` tasks are queued at a time, so that stopping a large sweep
    does not wait for a long queue and memory stays flat.
    """

    def __init__(self, workers: int) -> None:
        if workers < 1:
            raise ArgumentError(f"--workers {workers}: need at least 1 worker process")
        self.workers = workers
        self.description = f"{workers} local worker processes"
        self._pool = ProcessPoolExecutor(max_workers=workers,
                                         mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_worker_setup)

    def map_unordered(self, fn, items):
        pending: dict[Future, Any] = {}
        queue = iter(items)
        limit = 2 * self.workers
        try:
            while True:
                for item in queue:
                    pending[self._pool.submit(fn, item)] = item
                    if len(pending) >= limit:
                        break
                if not pending:
                    return
                done, _ = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    item = pending.pop(future)
                    yield item, future.result()
        finally:
            for future in pending:
                future.cancel()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class DaskExecutor(Executor):
    """Runs tasks on a Dask cluster, given its scheduler address or a ``Client``.

    Every worker must be able to import ``dspsim`` (install it on the workers). Chip
    descriptions travel with each task, so workers need no access to the user's files.
    """

    def __init__(self, address: str | None = None, *, client: Any = None,
                 connect_timeout_s: float = 10.0) -> None:
        distributed = import_distributed()
        self._owns_client = client is None
        if client is None:
            if not address:
                raise ArgumentError("--scheduler needs an address such as tcp://host:8786")
            try:
                client = distributed.Client(address, timeout=connect_timeout_s)
            except (OSError, TimeoutError) as exc:
                raise ArgumentError(
                    f"cannot connect to the Dask scheduler at {address!r}: {exc}; start one with "
                    f"`dask scheduler` (and workers with `dask worker {address}`) or check the "
                    f"address") from None
        self.client = client
        self._distributed = distributed
        workers = client.scheduler_info().get("workers", {})
        self.description = f"Dask cluster at {client.scheduler.address} ({len(workers)} workers)"
        self.notes = threads_note(workers)

    def map_unordered(self, fn, items):
        futures = {}
        for item in items:
            futures[self.client.submit(fn, item, pure=False)] = item
        remaining = set(futures)
        try:
            for future in self._distributed.as_completed(list(futures)):
                remaining.discard(future)
                yield futures[future], future.result()
        finally:
            if remaining:
                self.client.cancel(list(remaining))

    def close(self) -> None:
        if self._owns_client:
            self.client.close()


def threads_note(workers: dict) -> tuple[str, ...]:
    """A note when Dask workers run several threads: a run is mostly Python (the SimPy
    timing model), so threads of one worker take turns on its interpreter lock and each
    run takes up to that many times as long as in a process of its own."""
    threads = max((int(w.get("nthreads", 1)) for w in workers.values()), default=1)
    if threads <= 1:
        return ()
    return (f"the Dask workers run up to {threads} threads each; runs in one worker share its "
            f"Python interpreter lock, so each takes up to {threads}x as long: start workers "
            f"with one thread each (dask worker ADDRESS --nworkers N --nthreads 1)",)


def import_distributed():
    """The ``distributed`` module, or an error that says how to install it."""
    try:
        import distributed  # noqa: PLC0415 - optional dependency, imported on demand
    except ImportError:
        raise ArgumentError(f"running on a Dask cluster needs dask.distributed, which is not "
                            f"installed; install it with: {DISTRIBUTED_HINT}") from None
    return distributed


def make_executor(workers: int = 1, scheduler: str | None = None) -> Executor:
    """The executor the command line asks for: Dask if ``scheduler`` is given, else local."""
    if scheduler:
        return DaskExecutor(scheduler)
    if workers < 1:
        raise ArgumentError(f"--workers {workers}: need at least 1 worker process")
    return SerialExecutor() if workers == 1 else ProcessExecutor(workers)
