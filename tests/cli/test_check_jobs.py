"""``budgetlens check --jobs N``: worker processes, the same output as one process.

Mechanisms, never wall-clock: the output of ``-j 2`` is compared byte for byte with ``-j 1``
(itself the path every other test checks); the worker processes used are counted by their
PIDs (the ``RunStats`` that ``main.run`` returns); writes of the result cache are counted;
leftover processes are looked for in ``/proc`` and ``multiprocessing.active_children()``.
A signal is sent only once every worker has said it is at work (a line on the pipe); the
waits are events
(``tests/waiting.py``), with a hang guard only.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from budgetlens_cli import cache as result_cache
from budgetlens_cli import check_run, workers
from budgetlens_cli.main import RunStats, main
from budgetlens_cli.main import run as run_cli
from tests.core.contract.helpers import make_workspace
from tests.waiting import HANG_GUARD, Lines, wait_ended, wait_until

FORMATS = ("text", "json", "sarif", "github", "gitlab", "junit")
REPO = Path(__file__).resolve().parents[2]
PIPELINES = 90  # above check_run.MIN_PARALLEL


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT", result_cache.CACHE_DIR_ENV,
                 result_cache.NO_CACHE_ENV, "BUDGETLENS_TRACEBACK"):
        monkeypatch.delenv(name, raising=False)
    yield
    assert multiprocessing.active_children() == []
    assert [pid for pid in _children(os.getpid()) if pid != _resource_tracker()] == []


def _resource_tracker() -> int | None:
    """The helper process multiprocessing starts with the first ``spawn`` (it ends with its
    parent, when the pipe to it closes): not a worker."""
    from multiprocessing import resource_tracker

    pid: int | None = getattr(resource_tracker._resource_tracker, "_pid", None)
    return pid


def _children(pid: int) -> list[int]:
    """Every process whose parent is ``pid`` (from /proc: no psutil)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="ascii", errors="replace") as fh:
                for line in fh:
                    if line.startswith("PPid:"):
                        if int(line.split()[1]) == pid:
                            found.append(int(entry))
                        break
        except OSError:  # it ended meanwhile
            continue
    return found


def _step(i: int, prompt: str | None, output: int, name: str = "s") -> str:
    key = f", prompt_key: {prompt}" if prompt else ""
    return ("steps:\n"
            f"  - {{id: {name}, type: call_model{key}, max_output_tokens: {output},"
            " user_parts: {template: 'Answer: {q}'}}\n"
            f"  - {{id: t{i}, type: call_model, prompt_key: p{i % 7}, max_tokens: 64}}\n")


def _pipeline(i: int) -> str:
    kind = i % 7
    if kind == 1:  # over budget: an error under fail_fast
        return "settings:\n  max_context_tokens: 3000\n" + _step(i, f"p{i % 7}", 2000)
    if kind == 2:  # no prompt_key: a warning
        return "settings:\n  max_context_tokens: 1000\n" + _step(i, None, 100)
    if kind == 3:  # a prompt file that does not exist: an error
        return "settings:\n  max_context_tokens: 1000\n" + _step(i, f"missing{i}", 100)
    if kind == 4:  # extends a parent with an error
        return "extends: bad_base.yaml\n" + _step(i, f"p{i % 7}", 100)
    if kind == 5:  # extends a good parent; a wide step name
        return "extends: base.yaml\n" + _step(i, f"p{i % 7}", 100, name="予算")
    return "settings:\n  max_context_tokens: 1000\n" + _step(i, f"p{i % 7}", 100 + i)


def make_big(root: Path, count: int = PIPELINES) -> Path:
    pipelines = {f"f{i:03d}.yaml": _pipeline(i) for i in range(count)}
    pipelines["base.yaml"] = "settings:\n  max_context_tokens: 1200\n"
    pipelines["bad_base.yaml"] = "settings:\n  max_context_tokens: '500'\n"
    pipelines["f050.yaml"] = "steps: [\n  - id: x\n    type: call_model\n"  # broken YAML
    make_workspace(root, config={"model_context_window": 4096, "model_max_tokens": 1024,
                                 "development": True},
                   prompts={f"p{i}.txt": f"You answer question {i} with care. " * (5 + 9 * i)
                            for i in range(7)},
                   pipelines=pipelines)
    return root


@pytest.fixture
def big(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    make_big(tmp_path / "ws")
    monkeypatch.chdir(tmp_path)
    return Path("ws")


#: What the last ``_run`` did (``main.run`` returns it; the CLI keeps no such global).
_LAST: list[RunStats | None] = [None]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code, _LAST[0] = run_cli(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _last() -> RunStats:
    assert _LAST[0] is not None
    return _LAST[0]


# ------------------------------------------------------------------ the same output
@pytest.mark.parametrize("fmt", FORMATS)
def test_two_workers_print_the_same_bytes_as_one_process(
        big: Path, capsys: pytest.CaptureFixture[str], fmt: str) -> None:
    one = _run(capsys, "check", "ws", "-j", "1", "--no-cache", "--format", fmt)
    assert _last().worker_pids == frozenset() and _last().checked == PIPELINES + 2
    two = _run(capsys, "check", "ws", "--jobs", "2", "--no-cache", "--format", fmt)
    assert len(_last().worker_pids) == 2 and os.getpid() not in _last().worker_pids
    # Linux and one thread (pytest's own): forked, the children share the warm caches
    assert _last().method == ("fork" if workers.thread_count() == 1 else "spawn")
    assert two == one
    assert one[0] == 1 and one[2] == ""
    if fmt in ("json", "sarif", "gitlab"):
        json.loads(two[1])


def test_the_workspace_has_what_the_comparison_needs(
        big: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Errors, warnings, a broken YAML file, a missing prompt and a broken parent."""
    code, out, _ = _run(capsys, "check", "ws", "-j", "2", "--no-cache", "--format", "json")
    found = {d["code"] for d in json.loads(out)["diagnostics"]}
    assert code == 1
    assert {"BL050", "BL042", "BL023", "BL030", "BL040"} <= found, found
    assert any(c.startswith("BL00") for c in found), found  # the YAML error
    assert "missing10.txt" in out  # the prompt that does not exist


def test_spawn_gives_the_same_bytes(big: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    one = _run(capsys, "check", "ws", "-j", "1", "--no-cache")
    monkeypatch.setattr(workers, "start_method", lambda: "spawn")
    two = _run(capsys, "check", "ws", "-j", "2", "--no-cache")
    assert _last().method == "spawn" and len(_last().worker_pids) == 2
    assert two == one


def test_the_default_is_the_usable_cpus(big: Path, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(workers, "usable_cpus", lambda: 3)
    _run(capsys, "check", "ws", "--no-cache")
    assert len(_last().worker_pids) == 3
    monkeypatch.setattr(workers, "usable_cpus", lambda: 1)
    _run(capsys, "check", "ws", "--no-cache")
    assert _last().worker_pids == frozenset()


def test_usable_cpus_follows_the_affinity() -> None:
    expected = len(os.sched_getaffinity(0))
    if hasattr(os, "process_cpu_count"):
        expected = os.process_cpu_count() or 1
    assert workers.usable_cpus() == expected


def test_fork_only_while_the_process_has_one_thread() -> None:
    import threading

    before = workers.thread_count()
    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert workers.thread_count() == before + 1
        assert workers.start_method() == "spawn"
    finally:
        stop.set()
        thread.join()
    # join() returns before the OS has removed the thread (under load, visibly): wait for it
    wait_until(lambda: workers.thread_count() == before, "the thread to end")
    assert workers.start_method() == ("fork" if before == 1 else "spawn")


def test_a_small_workspace_is_checked_in_this_process(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    make_big(tmp_path / "ws", count=check_run.MIN_PARALLEL - 3)  # + 2 bases: one short
    monkeypatch.chdir(tmp_path)
    _run(capsys, "check", "ws", "-j", "2", "--no-cache")
    assert _last().checked == check_run.MIN_PARALLEL - 1 and _last().worker_pids == frozenset()


def test_bad_jobs_is_bad_usage(big: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for value in ("0", "-1", "two"):
        code, out, err = _run(capsys, "check", "ws", "-j", value)
        assert code == 2 and out == "" and "--jobs" in err


def test_help_documents_jobs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "-j N, --jobs N" in out and "usable CPUs" in out


# ------------------------------------------------------------------ the result cache
def test_the_cache_is_written_once_per_pipeline_by_this_process(
        big: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    reference = _run(capsys, "check", "ws", "-j", "1", "--no-cache")
    puts: list[str] = []
    real_put = result_cache.ResultCache.put_entry

    def counting(self: result_cache.ResultCache, pipeline: str, *args: Any) -> None:
        puts.append(pipeline)
        real_put(self, pipeline, *args)

    monkeypatch.setattr(result_cache.ResultCache, "put_entry", counting)
    first = _run(capsys, "check", "ws", "-j", "2")
    assert len(_last().worker_pids) == 2 and _last().checked == PIPELINES + 2
    assert sorted(puts) == sorted(str(p) for p in sorted(big.glob("pipelines/*.yaml")))
    (file,) = sorted(Path(result_cache.CACHE_DIR_NAME).glob("*/*.cache"))
    key = file.read_bytes()[len(result_cache.MAGIC):].split(b"\n", 1)[0].decode()
    entries = result_cache._decode(file.read_bytes(), key)
    assert entries is not None and len(entries) == PIPELINES + 2
    puts.clear()
    second = _run(capsys, "check", "ws", "-j", "2")
    assert _last().checked == 0 and _last().worker_pids == frozenset() and puts == []
    assert first == second == reference
    # one pipeline changed: checked again in this process (one is below MIN_PARALLEL)
    path = big / "pipelines" / "f000.yaml"
    path.write_text(path.read_text("utf-8").replace("1000", "1001"), "utf-8")
    _run(capsys, "check", "ws", "-j", "2")
    assert _last().checked == 1 and puts == [str(path)]


def test_inputs_read_by_the_check_are_not_read_again_to_key_the_cache(
        big: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    hashed: list[int] = []
    real_save = result_cache.ResultCache.save

    def save(self: result_cache.ResultCache) -> None:
        hashed.append(self.hashes.hashed)
        real_save(self)

    monkeypatch.setattr(result_cache.ResultCache, "save", save)
    _run(capsys, "check", "ws", "-j", "1")
    # hashed apart from the check's own reads: only what the check could not read, i.e.
    # the prompts that do not exist, the one place probed for a config.json that holds
    # none (ws/pipelines/config.json) and the two places probed for a models.json (next to
    # config.json, the user's); never a pipeline, a prompt or config.json it read
    missing_prompts = sum(1 for i in range(PIPELINES) if i % 7 == 3)
    assert hashed == [missing_prompts + 1 + 2]


def test_the_targets_of_config_json_are_looked_up_once_per_folder(
        big: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = check_run.target_matrix

    def counting(path: Path, *args: Any) -> Any:
        calls.append(Path(path).name)
        return real(path, *args)

    monkeypatch.setattr(check_run, "target_matrix", counting)
    reference = _run(capsys, "check", "ws", "-j", "1", "--no-cache")
    assert len(calls) == 1  # config.json names no targets: the other pipelines skip it
    # a config.json with targets: every pipeline gets its matrix
    config = big / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text("utf-8")),
                                  "targets": ["gpt-4o"]}), "utf-8")
    calls.clear()
    _, out, _ = _run(capsys, "check", "ws", "-j", "1", "--no-cache", "--format", "json")
    assert len(calls) == PIPELINES + 2
    assert len(json.loads(out)["targets"]) == PIPELINES + 2
    assert reference[1] != out


# ------------------------------------------------------------------ errors and shutdown
class _Unpicklable(Exception):
    def __init__(self, what: str, code: int) -> None:
        super().__init__(f"{what} ({code})")


@pytest.mark.parametrize("kind", [RuntimeError, _Unpicklable])
def test_an_error_in_a_worker_is_shown_as_in_one_process(
        big: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        kind: type[Exception]) -> None:
    real = check_run.check_pipeline

    def broken(path: Path | str, **kwargs: Any) -> Any:
        if Path(path).name in ("f070.yaml", "f080.yaml"):
            raise (kind("table is gone\nsecond line") if kind is RuntimeError
                   else kind("table is gone", 7))
        return real(path, **kwargs)

    monkeypatch.setattr(check_run, "check_pipeline", broken)  # a forked worker has it too
    monkeypatch.setattr(workers, "start_method", lambda: "fork")
    one = _run(capsys, "check", "ws", "-j", "1")
    two = _run(capsys, "check", "ws", "-j", "2")
    assert one[0] == 2 and one[1] == "" and "internal error" in one[2]
    assert two == one
    assert not list(Path(result_cache.CACHE_DIR_NAME).glob("*/*.cache"))  # nothing written
    monkeypatch.setenv("BUDGETLENS_TRACEBACK", "1")
    code, _, err = _run(capsys, "check", "ws", "-j", "2")
    assert code == 2 and err.startswith(one[2])
    assert "in broken" in err  # the worker's own traceback


def _echo(conn: Any, spec: Any) -> None:
    workers.serve(conn, lambda chunk: [spec * x for x in chunk])


def _fail_on_three(conn: Any, spec: Any) -> None:
    def work(chunk: list[int]) -> list[int]:
        if 3 in chunk:
            raise ValueError(f"chunk {chunk}")
        return chunk
    workers.serve(conn, work)


def _die_on_three(conn: Any, spec: Any) -> None:
    def work(chunk: list[int]) -> list[int]:
        if 3 in chunk:
            os._exit(3)
        return chunk
    workers.serve(conn, work)


def _at_work_forever() -> None:
    """Say so on standard output (the test signals once every worker has), then work until
    a signal ends the process (SIGINT is ignored in a worker: it never wakes it)."""
    os.write(1, f"working {os.getpid()}\n".encode())  # one write: lines never interleave
    while True:
        signal.pause()


_REAL_CHECK_WORKER = check_run._worker


def _check_worker_at_work(conn: Any, spec: Any) -> None:
    """``check_run._worker`` whose checks of the ``f*`` pipelines never end, forked or
    spawned (a spawned worker imports this module afresh: a patch made in the parent would
    not reach it)."""
    real = check_run.check_pipeline

    def at_work(path: Path | str, **kwargs: Any) -> Any:
        if os.path.basename(str(path)).startswith("f"):
            _at_work_forever()
        return real(path, **kwargs)

    check_run.check_pipeline = at_work  # type: ignore[assignment]
    _REAL_CHECK_WORKER(conn, spec)


def _sleep(conn: Any, spec: Any) -> None:
    def work(chunk: list[int]) -> list[int]:
        _at_work_forever()
        return chunk
    workers.serve(conn, work)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_run_chunks_hands_out_every_chunk_and_handles_them_in_order(method: str) -> None:
    got: list[tuple[int, list[int]]] = []
    pids: set[int] = set()

    def handle(index: int, pid: int, payload: list[int]) -> None:
        got.append((index, payload))
        pids.add(pid)

    chunks = [[i, i + 100] for i in range(25)]
    workers.run_chunks(_echo, 3, chunks, 3, handle, method)
    assert got == [(i, [3 * i, 3 * (i + 100)]) for i in range(25)]
    assert len(pids) == 3 and os.getpid() not in pids


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_the_earliest_failing_chunk_is_raised_with_the_worker_traceback(method: str) -> None:
    handled: list[int] = []
    with pytest.raises(ValueError, match=r"chunk \[3\]") as caught:
        workers.run_chunks(_fail_on_three, None, [[i] for i in range(10)], 2,
                           lambda i, pid, p: handled.append(i), method)
    assert handled == [0, 1, 2]
    assert isinstance(caught.value.__cause__, workers.RemoteTraceback)
    assert "in work" in str(caught.value.__cause__)


def test_a_worker_that_dies_is_an_error_not_a_hang() -> None:
    with pytest.raises(workers.WorkerDied, match="exit code 3"):
        workers.run_chunks(_die_on_three, None, [[i] for i in range(10)], 2,
                           lambda i, pid, p: None, "fork")


def _exit_at_once(conn: Any, spec: Any) -> None:
    os._exit(3)


def test_a_worker_dead_before_its_chunk_is_sent_is_an_error() -> None:
    """Sending to a worker that already died (a broken pipe) is WorkerDied, as a worker
    dying while it works is: the chunk is sent only once the worker is a zombie."""
    def when_dead(pid: int, chunk: Any) -> Any:
        wait_ended(pid)  # a zombie: run_chunks has not reaped it
        return chunk

    with pytest.raises(workers.WorkerDied, match="exit code 3"):
        workers.run_chunks(_exit_at_once, None, [[1]], 1, lambda i, pid, p: None, "fork",
                           outgoing=when_dead)


def test_an_exception_in_the_parent_stops_every_worker() -> None:
    def handle(index: int, pid: int, payload: Any) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        workers.run_chunks(_echo, 1, [[i] for i in range(10)], 2, handle, "fork")
    # the autouse fixture asserts no child is left


#: Each script takes Ctrl-C as a terminal gives it, even when the test runner was started
#: with SIGINT ignored (a shell's background job is): Python then keeps ``SIG_IGN``.
_POOL_SCRIPT = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {repo!r})
from budgetlens_cli import workers
from tests.cli.test_check_jobs import _sleep
print("started", flush=True)
workers.run_chunks(_sleep, None, [[i] for i in range(8)], 2, lambda *a: None, {method!r})
"""
_CHECK_SCRIPT = """
import signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.path.insert(0, {repo!r})
from budgetlens_cli import check_run, workers
from budgetlens_cli.main import main
from tests.cli.test_check_jobs import _check_worker_at_work
workers.start_method = lambda: {method!r}
check_run._worker = _check_worker_at_work  # a base is checked here, f* hang in the workers
print("started", flush=True)
sys.exit(main(["check", {ws!r}, "-j", "2", "--no-cache"]))
"""


def _descendants(pid: int) -> list[int]:
    out = []
    todo = [pid]
    while todo:
        kids = _children(todo.pop())
        out.extend(kids)
        todo.extend(kids)
    return out


def _interrupt(script: str, sig: int, children: int = 2) -> tuple[int, str, list[int]]:
    """Run ``script``, wait until both workers say they are at work (their parent has
    handed out chunks: it is past starting them, SIGINT no longer ignored), send ``sig`` to
    its process group (as a terminal does on Ctrl-C); its exit status, standard error and
    the PIDs of its ``children`` (two workers, and the resource tracker under spawn)."""
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        assert proc.stdout is not None
        lines = Lines(proc.stdout.fileno())
        assert lines.next() == "started\n"
        working: set[int] = set()
        while len(working) < 2:
            line = lines.next()
            assert line.startswith("working "), line  # "": it ended before
            working.add(int(line.split()[1]))
        kids = _children(proc.pid)
        assert len(kids) == children and working <= set(kids), (kids, working)
        os.killpg(proc.pid, sig)
        _, err = proc.communicate(timeout=HANG_GUARD)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode, err.decode(), kids


def _gone(pid: int) -> bool:
    """Whether ``pid`` ends (awaited: the resource tracker ends when it sees its parent's
    pipe close)."""
    wait_ended(pid)
    return True


@pytest.mark.parametrize(("method", "sig"), [
    ("fork", signal.SIGINT), ("spawn", signal.SIGINT), ("fork", signal.SIGTERM)])
def test_ctrl_c_or_sigterm_leaves_no_worker_behind(method: str, sig: int) -> None:
    code, err, kids = _interrupt(_POOL_SCRIPT.format(repo=str(REPO), method=method), sig,
                                 2 if method == "fork" else 3)
    if sig == signal.SIGINT:  # an uncaught KeyboardInterrupt ends Python by SIGINT
        assert code == -signal.SIGINT and "KeyboardInterrupt" in err, err
    else:
        assert code == 128 + signal.SIGTERM, err
    assert all(_gone(kid) for kid in kids)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_ctrl_c_during_check_exits_130_and_leaves_no_worker_behind(
        tmp_path: Path, method: str) -> None:
    make_big(tmp_path / "ws")
    script = _CHECK_SCRIPT.format(repo=str(REPO), method=method, ws=str(tmp_path / "ws"))
    code, err, kids = _interrupt(script, signal.SIGINT, 2 if method == "fork" else 3)
    assert code == 130 and err == "", err
    assert all(_gone(kid) for kid in kids)


def test_a_run_in_one_process_loads_no_multiprocessing(tmp_path: Path) -> None:
    """Below ``MIN_PARALLEL`` (and for a cached run) nothing of the workers is imported."""
    make_big(tmp_path / "ws", count=10)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUDGETLENS_")}
    script = ("import contextlib, io, json, sys\nfrom budgetlens_cli.main import main\n"
              "with contextlib.redirect_stdout(io.StringIO()):\n    main(['check', 'ws'])\n"
              "print(json.dumps(sorted(sys.modules)))\n")
    for _ in range(2):  # checked, then from the cache
        proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              cwd=tmp_path, env=env, timeout=HANG_GUARD)
        assert proc.returncode == 0, proc.stderr
        modules = set(json.loads(proc.stdout.splitlines()[-1]))
        assert "budgetlens_cli.check_cmd" in modules
        assert {"budgetlens_cli.workers", "multiprocessing"} & modules == set()
