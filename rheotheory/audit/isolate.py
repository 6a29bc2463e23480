"""Run a user's verifier where its exit cannot end the audit: one worker process per task.

A function under audit may call ``os._exit``, crash the interpreter or kill its own process; in
the audit's own process that ends ``rheo audit`` with whatever exit code it chose (``os._exit(0)``:
a CI step that reads the exit code passes). :func:`run_tasks` runs each task (a setting's probe or
its runs) in a forked child that sends its result back over a pipe; a child that ends without
sending one is reported in one line naming the task and how it ended. Exceptions the harness
turns into :class:`~rheotheory.audit.user.VerifierCallError` (``sys.exit``, ``KeyboardInterrupt``,
any other exception) come back as that error. Up to ``jobs`` children run at once.

Where ``fork`` is not available (Windows) the tasks run in this process: ``sys.exit`` and
exceptions are still caught, ``os._exit`` is not.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
from multiprocessing.connection import wait
from typing import Callable, Sequence

from ..errors import RheoError

__all__ = ["run_tasks", "can_isolate"]


def can_isolate() -> bool:
    """Whether children can be forked here.

    Returns
    -------
    bool
    """
    return "fork" in mp.get_all_start_methods()


def _child(task: Callable, conn) -> None:
    try:
        import torch

        torch.set_num_threads(1)
        out = ("ok", task())
    except RheoError as e:
        out = ("error", str(e))
    except BaseException as e:  # NOTE: the harness's own failure: reported, never a silent exit
        out = ("error", f"the audit's worker failed: {type(e).__name__}: {e}")
    try:
        conn.send(out)
    finally:
        conn.close()
        os._exit(0)  # NOTE: no atexit handlers of the parent's (a test runner's) in the child


def _ended(code: int | None) -> str:
    if code is None:
        return "ended"
    if code < 0:
        try:
            return f"was killed by signal {signal.Signals(-code).name}"
        except ValueError:
            return f"was killed by signal {-code}"
    return f"exited with code {code} (os._exit or a crash)"


def run_tasks(tasks: Sequence[tuple[str, Callable]], jobs: int = 1, done=None) -> list:
    """Run ``(label, task)`` pairs (``task() -> picklable``), each in a forked child, at most
    ``jobs`` at once; return their results in order.

    Parameters
    ----------
    tasks : sequence of (str, callable)
        Labels (for the messages) and tasks.
    jobs : int, default 1
        Children at once.
    done : callable, optional
        ``done(label)`` as each task ends.

    Returns
    -------
    list
        The tasks' results, in order.

    Raises
    ------
    rheotheory.audit.user.VerifierCallError
        The first failing task in order: its error, or how its process ended.
    """
    from .user import VerifierCallError

    if not can_isolate():
        out = []
        for label, task in tasks:
            out.append(task())
            if done is not None:
                done(label)
        return out
    ctx = mp.get_context("fork")
    results, errors = {}, {}
    pending = list(enumerate(tasks))
    running = {}  # reader -> (index, label, process)
    try:
        while pending or running:
            while pending and len(running) < max(1, int(jobs)):
                i, (label, task) = pending.pop(0)
                reader, writer = ctx.Pipe(duplex=False)
                proc = ctx.Process(target=_child, args=(task, writer), daemon=True)
                proc.start()
                writer.close()
                running[reader] = (i, label, proc)
            for reader in wait(list(running)):
                i, label, proc = running.pop(reader)
                try:
                    status, value = reader.recv()
                except (EOFError, OSError):
                    proc.join()
                    status, value = "error", (f"the verifier ended the audit's worker process: it {_ended(proc.exitcode)} "
                                              f"during {label}; a verifier must return its tokens, never exit")
                reader.close()
                proc.join()
                (results if status == "ok" else errors)[i] = value
                if done is not None:
                    done(label)
            if errors and min(errors) < min([i for i, _ in pending] + [i for i, _, _ in running.values()]
                                            + [len(tasks)]):
                break  # NOTE: every task before the first failure is done: report it now
    finally:
        for reader, (_, _, proc) in running.items():
            proc.kill()
            proc.join()
            reader.close()
    if errors:
        raise VerifierCallError(errors[min(errors)])
    return [results[i] for i in range(len(tasks))]
