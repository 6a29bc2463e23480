"""Where independent tasks run: this process, a local process pool, dask.distributed or Ray.

Every long driver (``rheo sweep``, the counterexample search, the simulation scripts) hands
its tasks to a :class:`concurrent.futures.Executor` obtained from :func:`open_executor`:

``process``
    the default: a local :class:`~concurrent.futures.ProcessPoolExecutor` with ``workers``
    processes, or this process itself when ``workers == 1`` (:class:`SerialExecutor`);
``dask``
    a :class:`dask.distributed.Client` on the scheduler at ``scheduler``, or on a
    :class:`dask.distributed.LocalCluster` of ``workers`` single-threaded workers when no
    address is given (extra ``rheotheory[dask]``);
``ray``
    Ray tasks on the cluster at ``scheduler`` (``ray.init(address=...)``), or on a local Ray
    instance with ``workers`` CPUs (extra ``rheotheory[ray]``).

Results never depend on the executor or the worker count: a task carries everything that
determines its result (its configuration and its own seed), and callers put results back in
task order (:func:`imap_unordered` yields each result with its task index).
"""

from __future__ import annotations

import signal
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from contextlib import contextmanager

from .errors import RheoError

__all__ = ["EXECUTORS", "SerialExecutor", "RayExecutor", "open_executor", "imap_unordered"]

#: Executor kinds accepted by :func:`open_executor` (and by the ``--executor`` flags).
EXECUTORS = ("process", "dask", "ray")

#: How to install each optional back-end (the one-line error of a missing extra says this).
INSTALL = {"dask": "pip install -e '.[dask]' in the repository's root  (dask[distributed])",
           "ray": "pip install -e '.[ray]' in the repository's root  (ray)"}

#: Seconds to wait for a terminated worker process of an interrupted pool to exit.
STOP_WAIT_S = 5.0


class SerialExecutor(Executor):
    """An executor that runs each task in this process when it is submitted.

    No pickling, no processes: the reference every other executor must reproduce, and the
    cheapest choice for one worker.
    """

    def __init__(self):
        self._shutdown = False

    def submit(self, fn, /, *args, **kwargs) -> Future:
        """Run ``fn(*args, **kwargs)`` now, in this process, and return its finished future.

        Parameters
        ----------
        fn : callable
            The task.
        *args : object
            Its positional arguments.
        **kwargs : object
            Its keyword arguments.

        Returns
        -------
        concurrent.futures.Future
            Done: holding the result, or the exception (an :class:`Exception`) the task raised.

        Raises
        ------
        RuntimeError
            If the executor was shut down.
        BaseException
            What is not an :class:`Exception` (``KeyboardInterrupt``, ``SystemExit``) propagates: it
            must stop the run, not become a result.
        """
        if self._shutdown:
            raise RuntimeError("cannot schedule new futures after shutdown")
        fut: Future = Future()
        try:
            fut.set_result(fn(*args, **kwargs))
        except BaseException as e:  # NOTE: KeyboardInterrupt must stop the run, not become a result
            if not isinstance(e, Exception):
                raise
            fut.set_exception(e)
        return fut

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Refuse new tasks from now on (there is never anything pending to wait for or cancel).

        Parameters
        ----------
        wait : bool, default True
            Ignored (every task finished at submit).
        cancel_futures : bool, default False
            Ignored (nothing is pending).
        """
        self._shutdown = True


class RayExecutor(Executor):
    """Ray tasks behind the :class:`concurrent.futures.Executor` interface.

    Each ``submit`` runs ``fn`` as a Ray task (one CPU) and returns the
    :class:`concurrent.futures.Future` of its object reference.

    Parameters
    ----------
    ray_module : module
        The imported ``ray`` package, already initialised (:func:`open_executor` does both).
    """

    def __init__(self, ray_module):
        self._ray = ray_module
        self._remote: dict = {}  # fn -> its ray.remote wrapper (wrapping is not free)
        self._refs: list = []

    def submit(self, fn, /, *args, **kwargs) -> Future:
        """Run ``fn(*args, **kwargs)`` as a Ray task of one CPU.

        Parameters
        ----------
        fn : callable
            The task, a top-level function (wrapped with ``ray.remote`` once per function).
        *args : object
            Its positional arguments.
        **kwargs : object
            Its keyword arguments.

        Returns
        -------
        concurrent.futures.Future
            The future of the task's object reference.
        """
        remote = self._remote.get(fn)
        if remote is None:
            remote = self._remote[fn] = self._ray.remote(num_cpus=1)(fn)
        ref = remote.remote(*args, **kwargs)
        self._refs.append(ref)
        return ref.future()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Forget the submitted tasks, cancelling (forcefully) the unfinished ones if asked.

        The Ray instance itself is shut down by :func:`open_executor`, not here.

        Parameters
        ----------
        wait : bool, default True
            Ignored (Ray tasks are not waited for here).
        cancel_futures : bool, default False
            Cancel every submitted task still running (``ray.cancel(ref, force=True)``).
        """
        if cancel_futures:
            for ref in self._refs:
                try:
                    self._ray.cancel(ref, force=True)
                except Exception:  # NOTE: a finished task cannot be cancelled; nothing to do
                    pass
        self._refs = []


def _ignore_sigint() -> None:
    """Worker initializer: Ctrl-C is the parent's to handle (one message, not one per worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _missing(kind: str) -> RheoError:
    return RheoError(f"--executor {kind} needs the optional extra: {INSTALL[kind]}")


def check_executor(kind: str, workers: int = 1, scheduler: str | None = None) -> None:
    """Raise :class:`RheoError` (one line) if ``kind`` is unknown, its extra is missing, or the
    arguments do not apply, before any work starts."""
    if kind not in EXECUTORS:
        raise RheoError(f"unknown executor {kind!r}; choose from {', '.join(EXECUTORS)}")
    if not isinstance(workers, int) or isinstance(workers, bool) or workers < 1:
        raise RheoError(f"workers must be a positive integer, got {workers!r}")
    if scheduler is not None and kind == "process":
        raise RheoError("--scheduler applies to --executor dask or ray, not to the local process pool")
    if kind == "dask":
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise _missing(kind) from None
    if kind == "ray":
        try:
            import ray  # noqa: F401
        except ImportError:
            raise _missing(kind) from None


@contextmanager
def open_executor(kind: str = "process", workers: int = 1, scheduler: str | None = None,
                  processes: bool = True) -> Iterator[Executor]:
    """An executor of kind ``kind``, shut down (pending tasks cancelled) when the block exits.

    A context manager: ``with open_executor("process", workers=2) as ex: ...``. On an exception
    in the block (Ctrl-C included) a process pool's workers are terminated and Ray's tasks
    cancelled.

    Parameters
    ----------
    kind : {'process', 'dask', 'ray'}, default 'process'
        See the module docstring.
    workers : int, default 1
        Local processes (``process``; 1 runs here, :class:`SerialExecutor`), workers of the
        LocalCluster (``dask`` without ``scheduler``) or CPUs of the local Ray instance (``ray``
        without ``scheduler``).
    scheduler : str, optional
        Address of a running dask scheduler (``tcp://host:8786``) or Ray cluster (``auto``,
        ``ray://host:10001``).
    processes : bool, default True
        For a dask LocalCluster: worker processes (True) or threads of this process (False;
        quicker to start, for tests and small tasks).

    Yields
    ------
    concurrent.futures.Executor
        :class:`SerialExecutor`, a :class:`~concurrent.futures.ProcessPoolExecutor`, a dask
        client's executor or a :class:`RayExecutor`.

    Raises
    ------
    RheoError
        Unknown kind, bad arguments, a missing optional extra (the message says how to install
        it), or a dask scheduler or Ray cluster that cannot be reached or started.
    """
    check_executor(kind, workers, scheduler)
    if kind == "process":
        if workers == 1:
            ex: Executor = SerialExecutor()
        else:
            # NOTE: imported here: its module loads multiprocessing, which every command would pay for
            from concurrent.futures import ProcessPoolExecutor

            ex = ProcessPoolExecutor(max_workers=workers, initializer=_ignore_sigint)
        try:
            yield ex
        except BaseException:
            _stop_pool(ex)
            raise
        ex.shutdown(wait=True)
    elif kind == "dask":
        yield from _dask(workers, scheduler, processes)
    else:
        yield from _ray(workers, scheduler)


def _stop_pool(ex: Executor) -> None:
    """Cancel what has not started and end the worker processes of an interrupted pool."""
    # NOTE: a running task of a ProcessPoolExecutor cannot be cancelled; without terminating its
    # process, an interrupted sweep would wait for the rows in flight (minutes) before exiting.
    # The processes are taken before shutdown(), which forgets them.
    procs = list((getattr(ex, "_processes", None) or {}).values())
    ex.shutdown(wait=False, cancel_futures=True)
    for proc in procs:
        proc.terminate()
    for proc in procs:
        proc.join(STOP_WAIT_S)


@contextmanager
def _sigint_ignored():
    """SIGINT ignored in this block (when called from the main thread; elsewhere a no-op)."""
    try:
        old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    except ValueError:  # NOTE: not the main thread; signal dispositions cannot be changed here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _dask(workers: int, scheduler: str | None, processes: bool):
    import logging

    from distributed import Client, LocalCluster

    cluster = None
    try:
        if scheduler is None:
            with _sigint_ignored():
                # NOTE: worker processes inherit the ignored SIGINT, so that Ctrl-C, which the
                # terminal sends to all of them, is handled once, here, not as one traceback each
                cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=processes,
                                       dashboard_address=None, silence_logs=logging.CRITICAL)
            client = Client(cluster)
        else:
            client = Client(scheduler, timeout="30s")
    except OSError as e:
        if cluster is not None:
            cluster.close()
        raise RheoError(f"cannot reach the dask scheduler {scheduler!r}: {e}") from None
    try:
        yield client.get_executor()
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def _ray(workers: int, scheduler: str | None):
    import logging

    import ray

    started = not ray.is_initialized()
    if started:
        try:
            if scheduler is None:
                ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
            else:
                ray.init(address=scheduler, log_to_driver=False, logging_level=logging.ERROR)
        except (ConnectionError, RuntimeError) as e:
            raise RheoError(f"cannot start or reach Ray ({scheduler or 'local'}): {e}") from None
    ex = RayExecutor(ray)
    try:
        yield ex
    except BaseException:
        ex.shutdown(cancel_futures=True)
        raise
    finally:
        if started:
            ray.shutdown()


def imap_unordered(ex: Executor, fn: Callable, items: Iterable,
                   window: int | None = None) -> Iterator[tuple[int, object]]:
    """Run ``fn(item)`` for every item on ``ex``; yield ``(index, result)`` as tasks finish.

    Parameters
    ----------
    ex : concurrent.futures.Executor
        From :func:`open_executor`.
    fn : callable
        A top-level function of one argument (worker processes import it by name).
    items : iterable
        Task arguments; read lazily when ``window`` is given.
    window : int, optional
        Most tasks in flight at once (None: submit everything at once; a :class:`SerialExecutor`
        always runs one at a time). With a window, a long lazy ``items`` is fine and a caller that
        stops early (``break``, an error, Ctrl-C) leaves little work behind.

    Yields
    ------
    (int, object)
        The task's index in ``items`` and its result. The tasks still pending when the
        caller stops are cancelled; the exception of a failed task is raised here.

    Raises
    ------
    RheoError
        If ``window`` is below 1.
    """
    if window is not None and window < 1:
        raise RheoError(f"window must be a positive integer, got {window!r}")
    if isinstance(ex, SerialExecutor):
        window = 1  # NOTE: it runs each task at submit; one at a time, so results come out as they finish
    it = enumerate(items)
    pending: dict[Future, int] = {}
    try:
        while True:
            while window is None or len(pending) < window:
                nxt = next(it, None)
                if nxt is None:
                    break
                pending[ex.submit(fn, nxt[1])] = nxt[0]
            if not pending:
                return
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in sorted(done, key=pending.__getitem__):
                i = pending.pop(fut)
                yield i, fut.result()
    finally:
        for fut in pending:
            fut.cancel()
