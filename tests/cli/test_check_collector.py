"""``budgetlens check`` runs without the cyclic garbage collector (``collector_paused``).

Mechanisms, never wall-clock: the collections that start while the command runs are counted
through ``gc.callbacks``; the results still alive when the collector is turned back on are
counted with ``gc.get_objects``.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from budgetlens_cli import check_cmd, check_result, check_run
from budgetlens_cli.main import main
from tests.core.contract.helpers import make_workspace

PIPELINES = 300
STEP = """  - id: s{n}
    type: call_model
    prompt_key: p{k}
    user_parts:
      template: "Question: {{question}}"
    max_output_tokens: {out}
"""


@pytest.fixture()
def workspace(tmp_path: Path) -> Path:
    pipelines = {f"p{i:03d}.yaml": "settings:\n  max_context_tokens: 2000\nsteps:\n"
                 + "".join(STEP.format(n=n, k=(i + n) % 7, out=100 + i) for n in range(2))
                 for i in range(PIPELINES)}
    pipelines["broken.yaml"] = "extends: missing.yaml\nsteps: [1\n"  # errors: exceptions
    return make_workspace(tmp_path / "ws", config={"model_context_window": 4096},
                          pipelines=pipelines,
                          prompts={f"p{k}.txt": f"prompt {k}\n" * 20 for k in range(7)})


@pytest.fixture()
def collections() -> Iterator[list[int]]:
    """The generation of every collection that starts while ``check_cmd._run`` runs."""
    found: list[int] = []
    inside = [False]

    def callback(phase: str, info: dict[str, Any]) -> None:
        if phase == "start" and inside[0]:
            found.append(int(info["generation"]))

    run = check_cmd._run

    def watched(args: Any) -> tuple[int, Any]:
        inside[0] = True
        try:
            return run(args)
        finally:
            inside[0] = False

    gc.callbacks.append(callback)
    mp = pytest.MonkeyPatch()
    mp.setattr(check_cmd, "_run", watched)
    try:
        yield found
    finally:
        mp.undo()
        gc.callbacks.remove(callback)


def _check(ws: Path, fmt: str, capsys: pytest.CaptureFixture[str]) -> str:
    code = main(["check", str(ws), "-j", "1", "--no-cache", "--format", fmt])
    assert code == 1  # broken.yaml
    return capsys.readouterr().out


@pytest.mark.parametrize("fmt", ["text", "json", "sarif"])
def test_no_collection_runs_while_checking_and_printing(
        workspace: Path, collections: list[int], fmt: str,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert gc.isenabled()
    gc.set_threshold(1, 1, 1)  # a collection at every allocation, were the collector on
    try:
        out = _check(workspace, fmt, capsys)
    finally:
        gc.set_threshold(*_THRESHOLDS)
    assert out
    assert collections == []
    assert gc.isenabled()  # back on


def test_the_collector_stays_off_when_it_was_off(workspace: Path, collections: list[int],
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    gc.disable()
    try:
        _check(workspace, "text", capsys)
        assert not gc.isenabled()
    finally:
        gc.enable()
    assert collections == []


def test_the_results_are_freed_before_the_collector_is_back_on(
        workspace: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """So the first collection after the run does not walk them (nor the reports, nor the
    run's caches)."""
    alive: list[int] = []
    enable = gc.enable

    def counting_enable() -> None:
        alive.append(sum(isinstance(o, (check_result.PipelineResult, check_run._Checker))
                         for o in gc.get_objects()))
        enable()

    monkeypatch.setattr(check_run.gc, "enable", counting_enable)
    _check(workspace, "json", capsys)
    assert alive == [0]


_THRESHOLDS = gc.get_threshold()


def test_checking_makes_no_deep_copies(workspace: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Loading a pipeline copies nothing whole (``copy.deepcopy`` is never called)."""
    import copy

    calls: list[object] = []
    deepcopy = copy.deepcopy

    def counting(value: Any, *args: Any) -> Any:
        calls.append(value)
        return deepcopy(value, *args)

    monkeypatch.setattr(copy, "deepcopy", counting)
    for fmt in ("text", "json"):
        _check(workspace, fmt, capsys)
    assert calls == []


def test_the_results_kept_for_the_answer_are_freed_before_the_collector_is_back_on(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """With the result cache on, the cache the run's answer is recorded from holds every
    result: the collector stays off until the answer is recorded, and the results are let go
    before it is back on (once), so its first collection does not walk them."""
    alive: list[int] = []
    enable = gc.enable

    def counting_enable() -> None:
        alive.append(sum(isinstance(o, (check_result.PipelineResult, check_run._Checker))
                         for o in gc.get_objects()))
        enable()

    monkeypatch.setattr(check_run.gc, "enable", counting_enable)
    code = main(["check", str(workspace), "-j", "1", "--cache-dir", str(tmp_path / "cache")])
    assert code == 1
    assert capsys.readouterr().out
    assert alive == [0]
    assert gc.isenabled()


_PROCESS = """
import gc, json, sys
from budgetlens_cli import main as cli
seen = {}
real = cli._check_recording
def watched(argv, args):
    seen["enabled_inside"] = gc.isenabled()
    return real(argv, args)
cli._check_recording = watched
sys.argv = ["budgetlens", "check", sys.argv[1], "-j", "1", "--no-cache"]
code = cli.main()
seen.update(code=code, frozen=gc.get_freeze_count(), enabled=gc.isenabled())
gc.unfreeze()
cli.main(["check", sys.argv[2], "-j", "1", "--no-cache"])
seen["frozen_after_argv_call"] = gc.get_freeze_count()
print(json.dumps(seen), file=sys.stderr)
"""


def test_the_process_freezes_its_heap_before_it_exits(workspace: Path) -> None:
    """``main()`` of the process's own command line freezes what is alive as it returns
    (the interpreter's finalisation then collects only what is made after); ``main(argv)``,
    a caller in process, is left as it was."""
    import json
    import os
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    proc = subprocess.run([sys.executable, "-c", _PROCESS, str(workspace), str(workspace)],
                          capture_output=True, text=True, timeout=300, env=env)
    seen = json.loads(proc.stderr.strip().splitlines()[-1])
    assert seen["code"] == 1  # broken.yaml
    assert seen["enabled_inside"] is True  # collector_paused turns it off for the run
    assert seen["frozen"] > 1000  # the modules, the caches
    assert seen["enabled"] is True
    assert seen["frozen_after_argv_call"] == 0



_OWN_PROCESS = """
import gc, sys
from budgetlens_cli import main as cli
{patch}
found, seen = [], []
gc.callbacks.append(lambda phase, info: found.append(info["generation"]) if phase == "start"
                    else None)
real = cli._check_recording
def watched(argv, args):
    seen.extend([len(found), gc.get_freeze_count()])
    return real(argv, args)
cli._check_recording = watched
sys.argv = ["budgetlens", "check", "ws", "-j", "1", "--no-cache"]
code = cli.main()  # the process's own command line
gc.callbacks.clear()
print(code, *seen, file=sys.stderr)
"""


def _own_process(cwd: Path, patch: str = "") -> list[int]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BUDGETLENS_")}
    proc = subprocess.run([sys.executable, "-c", _OWN_PROCESS.format(patch=patch)],
                          capture_output=True, text=True, cwd=cwd, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return [int(n) for n in proc.stderr.splitlines()[-1].split()]


def test_a_check_of_its_own_process_loads_without_collections(workspace: Path) -> None:
    # loading the checker's modules started about twenty collections (2 ms of a
    # one-pipeline check): they load with the collector off, and are frozen before the run
    code, collections, frozen = _own_process(workspace.parent)
    assert (code, collections) == (1, 0)  # 1: broken.yaml
    assert frozen > 1000  # the modules loaded
    # the watch sees them: with the pause off, loading starts collections, nothing frozen
    code, collections, frozen = _own_process(workspace.parent,
                                             "cli._start_paused = lambda argv: False")
    assert code == 1 and collections > 0 and frozen == 0
