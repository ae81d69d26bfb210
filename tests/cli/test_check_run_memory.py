"""``budgetlens check``: what the run keeps while it checks, and what it skips.

Mechanisms, never times: the run's ``BudgetCache`` keeps no report and no plan (each
pipeline is checked once per options), parses a parent once for all its children (kept),
and does not keep the checked pipeline's own parse; the YAML reader's re-reading of recent
texts (``yamldoc.incremental``) is off while checking and back on after; the policy
variables are read once per run, not once per pipeline. The output is the one the tests in
tests/cli/test_check.py pin; here it is compared with a run of ``check_pipeline`` alone.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from budgetlens.contract import check as core_check
from budgetlens.contract import pipeline as core_pipeline
from budgetlens.contract import planner as core_planner
from budgetlens.contract.cache import BudgetCache
from budgetlens.yamldoc import incremental
from budgetlens_cli import check_run
from budgetlens_cli.main import main
from tests.core.contract.helpers import make_workspace

CHILDREN = 12


@pytest.fixture
def ws(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for name in ("PIPELINE_LIMITS_POLICY", "APP_DEVELOPMENT", "BUDGETLENS_CACHE_DIR",
                 "BUDGETLENS_NO_CACHE"):
        monkeypatch.delenv(name, raising=False)
    pipelines = {f"c{i:02d}.yaml": ("extends: base.yaml\nsteps:\n"
                                    f"  - {{id: s, type: call_model, prompt_key: p,"
                                    f" max_output_tokens: {100 + i}}}\n")
                 for i in range(CHILDREN)}
    pipelines["base.yaml"] = "settings:\n  max_context_tokens: 1000\n"
    make_workspace(tmp_path / "ws",
                   config={"model_context_window": 8192, "model_max_tokens": 512},
                   prompts={"p.txt": "Answer with care. " * 20}, pipelines=pipelines)
    monkeypatch.chdir(tmp_path)
    yield Path("ws")


def _caches(monkeypatch: pytest.MonkeyPatch) -> list[BudgetCache]:
    """Every ``BudgetCache`` made from now on (the run makes one)."""
    made: list[BudgetCache] = []
    init = BudgetCache.__init__

    def keep(self: BudgetCache, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(BudgetCache, "__init__", keep)
    return made


def _count_reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    reads: Counter[str] = Counter()
    read = core_pipeline.read_pipeline

    def counting(path: str, files: Any) -> Any:
        reads[os.path.basename(path)] += 1
        return read(path, files)

    monkeypatch.setattr(core_planner, "read_pipeline", counting)
    return reads


def test_the_run_keeps_no_report_no_plan_and_no_checked_parse(
        ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    caches = _caches(monkeypatch)
    reads = _count_reads(monkeypatch)
    assert main(["check", "ws", "-j", "1", "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert f"{CHILDREN + 1} pipelines" in out
    [cache] = caches
    sizes = cache.sizes()
    assert sizes["reports"] == 0 and sizes["structures"] == 0, sizes
    kept = {path for kind, path in cache._files if kind == "pipeline"}
    assert kept == {os.path.normpath("ws/pipelines/base.yaml")}  # the parent only
    # each child read once; base.yaml once as a pipeline (not kept) and once as the parent
    # all the children share
    assert reads == Counter({**{f"c{i:02d}.yaml": 1 for i in range(CHILDREN)},
                             "base.yaml": 2}), reads


def test_the_results_are_those_of_check_pipeline_with_a_full_cache(
        ws: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from budgetlens.contract.results import CheckOptions
    from budgetlens.files import DiskFiles

    assert main(["check", "ws", "-j", "1", "--no-cache", "--format", "json"]) == 0
    out = capsys.readouterr().out
    cache = BudgetCache()
    for path in sorted(Path("ws/pipelines").iterdir()):
        report = core_check.check_pipeline(path, files=DiskFiles(),
                                           options=CheckOptions(environ={}), cache=cache)
        for step in report.steps:
            assert f'"total": {step.total}' in out
    assert cache.sizes()["reports"] == CHILDREN + 1  # the plain cache does keep them


def test_recent_readings_are_not_searched_while_checking(
        ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    answered: list[bool] = []
    switched: list[bool] = []
    reread = incremental.reread

    def counting(text: str, loader: Any) -> Any:
        switched.append(incremental.ENABLED)
        found = reread(text, loader)
        answered.append(found is not None)
        return found

    monkeypatch.setattr(incremental, "reread", counting)
    assert incremental.ENABLED
    assert main(["check", "ws", "-j", "1", "--no-cache"]) == 0
    capsys.readouterr()
    assert incremental.ENABLED  # back on for the next caller (the language server)
    # asked (the reader always asks) while switched off: no search, no answer
    assert len(switched) >= CHILDREN and not any(switched) and not any(answered)


def test_the_policy_variables_are_read_once_per_run(
        ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PIPELINE_LIMITS_POLICY", "fail_fast")
    # no user models.json to locate: the run's environment is the policy variable alone
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("HOME", raising=False)
    options = check_run.CheckSpec().options()
    assert options.environ == {"PIPELINE_LIMITS_POLICY": "fail_fast"}
    calls: list[dict[str, str]] = []
    read = check_run.policy_environ

    def counting() -> dict[str, str]:
        calls.append(read())
        return calls[-1]

    monkeypatch.setattr(check_run, "policy_environ", counting)
    assert main(["check", "ws", "-j", "1", "--no-cache"]) == 0
    out = capsys.readouterr().out
    assert calls == [{"PIPELINE_LIMITS_POLICY": "fail_fast"}]  # once for 13 pipelines
    # every table (base.yaml has no step) shows the policy from the environment
    assert out.count("policy fail_fast (env PIPELINE_LIMITS_POLICY)") == CHILDREN


def test_a_pipeline_is_parsed_once_for_itself_and_every_target(
        ws: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    caches = _caches(monkeypatch)
    reads = _count_reads(monkeypatch)
    assert main(["check", "ws", "-j", "1", "--no-cache", "--target", "gpt-4o",
                 "--target", "gpt-4"]) == 0
    out = capsys.readouterr().out
    assert "gpt-4o" in out and "gpt-4" in out
    assert reads == Counter({**{f"c{i:02d}.yaml": 1 for i in range(CHILDREN)},
                             "base.yaml": 2}), reads
    [cache] = caches
    assert {path for kind, path in cache._files if kind == "pipeline"} == {
        os.path.normpath("ws/pipelines/base.yaml")}


def _subclasses_of(text: str, base: str) -> list[str]:
    """The classes of ``text`` that name ``base`` among their bases."""
    import ast

    return [node.name for node in ast.walk(ast.parse(text)) if isinstance(node, ast.ClassDef)
            and any((b.id if isinstance(b, ast.Name) else getattr(b, "attr", "")) == base
                    for b in node.bases)]


def test_the_subclass_rule_itself() -> None:
    assert _subclasses_of("class A(BudgetCache):\n    pass\nclass B(x.BudgetCache):\n"
                          "    pass\nclass C(dict):\n    pass\n", "BudgetCache") == ["A", "B"]


def test_the_cli_uses_the_core_cache_as_it_is() -> None:
    # the run's cache is BudgetCache(keep_results=False); the result cache keys an entry by
    # the report's input_fingerprints (no subclass capturing them in store_report)
    package = Path(check_run.__file__).parent
    found = [f"{path.name}: {name}" for path in sorted(package.glob("*.py"))
             for name in _subclasses_of(path.read_text("utf-8"), "BudgetCache")]
    assert found == []
