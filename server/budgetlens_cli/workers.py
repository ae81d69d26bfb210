"""Worker processes for ``budgetlens check --jobs N``: chunks of work, results in order.

Generic: it knows nothing of pipelines. ``run_chunks`` starts ``jobs`` processes running
``worker(conn, spec)`` (a module-level function: under ``spawn`` it is pickled by name), hands
each one chunk at a time (plus one queued, so a worker never waits for the parent) and calls
``handle`` with every chunk's reply **in chunk order**, whatever order the workers finish in.

- **Start method**: ``fork`` on Linux while the process has a single thread (the children
  start at once and share the parent's imported modules and warm caches copy-on-write;
  forking a process with threads can deadlock), else ``spawn``. Nothing mutable is shared:
  a forked child has its own copy of everything, and chunks and replies travel through pipes.
- **Protocol**: a worker receives a chunk, replies ``(OK, pid, payload, wrote)`` or
  ``(FAILED, pid, error, wrote)`` (``ErrorReport``: the exception and its traceback as
  text; ``wrote``: whether the worker has written to its ``sys.stderr``, which it writes
  through at once), and stops on ``None``. ``serve`` implements the worker side of it.
- **Errors**: a worker's exception is raised again in the parent (the same type and message
  when it can be pickled; its traceback as the ``__cause__``), at its chunk's turn: the error
  of the earliest failing chunk wins, as it would in one process. A worker that dies (a
  crash, a kill) is a ``WorkerDied`` error, never a hang.
- **Shutdown**: workers ignore SIGINT, so Ctrl-C reaches the parent alone; on any exception
  (Ctrl-C included) and on SIGTERM the parent terminates every worker and waits for it, so
  no process is left behind. After a normal run each worker is told to stop and joined.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import pickle
import signal
import sys
import threading
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from types import FrameType
from typing import Any

OK = "ok"
FAILED = "failed"
#: Seconds a worker gets to stop after SIGTERM before it is killed.
STOP_GRACE = 5.0
#: Seconds to wait for the exit status of a worker whose pipe closed (it is exiting).
DIED_GRACE = 5.0


def usable_cpus() -> int:
    """The CPUs this process may run on (``os.process_cpu_count`` on Python 3.13+, else the
    scheduler affinity, else ``os.cpu_count``); at least 1."""
    counter = getattr(os, "process_cpu_count", None)
    if counter is not None:
        count = counter()
    else:
        try:
            count = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            count = os.cpu_count()
    return max(1, count or 1)


def thread_count() -> int:
    """Threads of this process as the OS counts them (``/proc``; native threads included),
    else as ``threading`` does."""
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Threads:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return threading.active_count()


def start_method() -> str:
    """``fork`` on Linux when it is safe (one thread), else ``spawn``."""
    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods() \
            and thread_count() == 1:
        return "fork"
    return "spawn"


class WorkerDied(RuntimeError):
    """A worker process ended without replying (killed, crashed)."""


class RemoteTraceback(Exception):
    """The traceback of an exception raised in a worker (the ``__cause__`` of the exception
    raised again in the parent, so ``traceback.print_exc`` shows where it happened)."""

    def __str__(self) -> str:
        return "\n" + str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class ErrorReport:
    """An exception of a worker as it travels to the parent."""

    pickled: bytes | None
    module: str
    name: str
    message: str
    traceback: str

    @classmethod
    def of(cls, exc: BaseException) -> ErrorReport:
        pickled: bytes | None
        try:
            pickled = pickle.dumps(exc)
            pickle.loads(pickled)  # an exception that cannot be rebuilt is sent by name
        except Exception:
            pickled = None
        kind = type(exc)
        return cls(pickled, kind.__module__, kind.__qualname__, str(exc),
                   "".join(traceback.format_exception(exc)))

    def exception(self) -> BaseException:
        """The exception to raise in the parent: the worker's own, else one of a class of the
        same name (so the one-line message reads the same)."""
        if self.pickled is not None:
            with contextlib.suppress(Exception):
                exc = pickle.loads(self.pickled)
                if isinstance(exc, BaseException):
                    return exc
        kind = type(self.name.rsplit(".", 1)[-1], (RuntimeError,), {"__module__": self.module})
        made: BaseException = kind(self.message)
        return made


class _Watched:
    """A worker's ``sys.stderr``: written through at once, remembering that it was (the
    parent records no answer of a run that wrote there)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.wrote = False

    def write(self, text: str) -> int:
        if text:
            self.wrote = True
        written = self.stream.write(text)
        return len(text) if written is None else int(written)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def _watched(stream: Any) -> _Watched:
    """``stream`` watched (once)."""
    return stream if isinstance(stream, _Watched) else _Watched(stream)


def _watched_worker(worker: Callable[..., None], conn: Connection, spec: Any) -> None:
    """A worker process's target: ``worker(conn, spec)`` with ``sys.stderr`` watched from
    its first line (what it writes while it starts up counts too)."""
    sys.stderr = _watched(sys.stderr)
    worker(conn, spec)


def serve(conn: Connection, work: Callable[[Any], Any]) -> None:
    """The worker side: ``work(chunk)`` for every chunk received until ``None``; each reply
    is sent back, saying whether anything was written to ``sys.stderr`` so far. SIGINT is
    ignored (the parent handles Ctrl-C and stops the workers)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a forked child may inherit the parent's
    pid = os.getpid()
    watched = sys.stderr = _watched(sys.stderr)
    while True:
        try:
            chunk = conn.recv()
        except EOFError:  # the parent is gone
            return
        if chunk is None:
            return
        status = OK
        try:
            payload = work(chunk)
        except Exception as exc:  # shown by the parent, as if raised there
            status, payload = FAILED, ErrorReport.of(exc)
        conn.send((status, pid, payload, watched.wrote))


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """SIGINT ignored while workers start, so they inherit ``SIG_IGN`` (a spawned child
    keeps it through ``exec``: Python installs no handler over an ignored SIGINT)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, old)


def _raise_exit(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


@contextlib.contextmanager
def _sigterm_as_exit() -> Iterator[None]:
    """SIGTERM (when it would kill the process outright) raises ``SystemExit(143)`` while
    workers run, so the ``finally`` that stops them runs."""
    if threading.current_thread() is not threading.main_thread() or \
            signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        yield
        return
    signal.signal(signal.SIGTERM, _raise_exit)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _died(process: multiprocessing.process.BaseProcess) -> WorkerDied:
    # its end of the pipe is closed: it is exiting; under load that can take a while
    process.join(DIED_GRACE)
    code = process.exitcode
    how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
    return WorkerDied(f"check worker process {process.pid} ended without a reply ({how})")


class _Pool:
    """The running workers, the chunks each one holds and the replies not yet handled."""

    def __init__(self, outgoing: Callable[[int, Any], Any] | None = None) -> None:
        self.outgoing = outgoing
        self.processes: list[multiprocessing.process.BaseProcess] = []
        self.conns: list[Connection] = []
        self.holding: list[deque[int]] = []

    def start(self, worker: Callable[..., None], spec: Any, jobs: int, method: str) -> None:
        ctx: Any = multiprocessing.get_context(method)
        for stream in (sys.stdout, sys.stderr):  # a forked child must not write them again
            with contextlib.suppress(Exception):
                stream.flush()
        with _sigint_ignored():
            for _ in range(jobs):
                parent_end, child_end = ctx.Pipe()
                process = ctx.Process(target=_watched_worker, args=(worker, child_end, spec),
                                      daemon=True, name="budgetlens-check-worker")
                try:
                    process.start()
                finally:
                    child_end.close()
                self.processes.append(process)
                self.conns.append(parent_end)
                self.holding.append(deque())

    def send(self, worker: int, index: int, chunk: Any) -> None:
        if self.outgoing is not None:
            chunk = self.outgoing(self.processes[worker].pid or 0, chunk)
        try:
            self.conns[worker].send(chunk)
        except OSError:  # it died before it read its chunk (EPIPE, ECONNRESET)
            raise _died(self.processes[worker]) from None
        self.holding[worker].append(index)

    def receive(self) -> Iterator[tuple[int, int, tuple[str, int, Any, bool]]]:
        """``(worker, chunk index, reply)`` for each reply that is ready (waits for one)."""
        busy = [w for w, held in enumerate(self.holding) if held]
        if not busy:
            raise RuntimeError("no check worker holds a chunk")  # pragma: no cover - a bug
        by_conn = {id(self.conns[w]): w for w in busy}
        by_sentinel = {self.processes[w].sentinel: w for w in busy}
        ready = wait([*(self.conns[w] for w in busy), *by_sentinel])
        for obj in ready:
            if isinstance(obj, Connection):
                w = by_conn[id(obj)]
            elif isinstance(obj, int) and obj in by_sentinel:
                w = by_sentinel[obj]
                if not self.holding[w] or self.conns[w].poll():
                    continue  # handled already, or its reply is waiting on the connection
            else:  # pragma: no cover - wait() returns only what it was given
                continue
            try:
                reply = self.conns[w].recv()
            except (EOFError, OSError):
                raise _died(self.processes[w]) from None
            yield w, self.holding[w].popleft(), reply

    def stop(self, clean: bool) -> None:
        """Stop every worker: told to (``clean``), else terminated; always joined."""
        for process, conn in zip(self.processes, self.conns, strict=True):
            if clean:
                with contextlib.suppress(OSError):
                    conn.send(None)
            elif process.is_alive():
                process.terminate()
        for process in self.processes:
            process.join(STOP_GRACE)
            if process.is_alive():
                process.kill()
                process.join()
        for conn in self.conns:
            conn.close()


def run_chunks(worker: Callable[..., None], spec: Any, chunks: Sequence[Any], jobs: int,
               handle: Callable[[int, int, Any], None], method: str | None = None,
               outgoing: Callable[[int, Any], Any] | None = None) -> bool:
    """Run every chunk in ``jobs`` worker processes; ``handle(index, pid, payload)`` for
    each chunk in order. A worker's exception is raised here at its chunk's turn. With
    ``outgoing``, a worker receives ``outgoing(its pid, chunk)`` (made when the chunk is
    handed out: it may carry what the replies handled so far told) instead of the chunk.
    Whether a worker wrote to its ``sys.stderr``."""
    if not chunks:
        return False
    pool = _Pool(outgoing)
    clean = False
    with _sigterm_as_exit():
        try:
            pool.start(worker, spec, max(1, min(jobs, len(chunks))), method or start_method())
            wrote = _schedule(pool, chunks, handle)
            clean = True
        finally:
            pool.stop(clean)
    return wrote


def _schedule(pool: _Pool, chunks: Sequence[Any], handle: Callable[[int, int, Any], None]) -> bool:
    """Hand out the chunks (one at work and one queued per worker) and handle the replies
    in chunk order; after a failure no new chunk is handed out. Whether a worker wrote to
    its ``sys.stderr``."""
    replies: dict[int, tuple[str, int, Any, bool]] = {}
    next_chunk = done = 0
    failed = wrote = False
    for _ in range(2):
        for w in range(len(pool.processes)):
            if next_chunk < len(chunks):
                pool.send(w, next_chunk, chunks[next_chunk])
                next_chunk += 1
    while True:
        while done in replies:
            status, pid, payload, said = replies.pop(done)
            wrote = wrote or said
            if status != OK:
                error: ErrorReport = payload
                raise error.exception() from RemoteTraceback(error.traceback)
            handle(done, pid, payload)
            done += 1
        if done == len(chunks):
            return wrote
        for w, index, reply in pool.receive():
            replies[index] = reply
            failed = failed or reply[0] != OK
            if next_chunk < len(chunks) and not failed:
                pool.send(w, next_chunk, chunks[next_chunk])
                next_chunk += 1
