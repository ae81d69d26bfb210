"""What a run of many checks (one ``RunFiles`` and one ``BudgetCache``, as the CLI's) makes
once instead of once per pipeline: the model limits of a config.json, the tokenizer of a
config.json's folder, each path's absolute form, config.json's folder. Mechanisms only: call
counts, and the same reports as checks that share nothing."""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from budgetlens.contract import check as check_module
from budgetlens.contract import planner as planner_module
from budgetlens.contract import step_plan as step_plan_module
from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.check import check_pipeline
from budgetlens.contract.config import LoadedConfig
from budgetlens.contract.results import CheckOptions
from budgetlens.files import DiskFiles, RunFiles
from tests.core.contract.helpers import make_workspace

PIPELINES = 6


def _workspace(root: Path, config: dict[str, Any]) -> list[Path]:
    pipelines = {"base.yaml": "settings:\n  max_context_tokens: 1000\nsteps:\n"
                              "  - id: one\n    type: call_model\n    prompt_key: p\n"
                              "    max_output_tokens: 100\n"}
    for i in range(PIPELINES):
        pipelines[f"flow{i}.yaml"] = (f"extends: base.yaml\nsettings:\n"
                                      f"  max_context_tokens: {1000 + i}\n")
    make_workspace(root, config=config, pipelines=pipelines, prompts={"p.txt": "hello"})
    return [root / "pipelines" / f"flow{i}.yaml" for i in range(PIPELINES)]


def _run(paths: list[Path], files: RunFiles, cache: BudgetCache) -> list[Any]:
    options = CheckOptions(environ={})
    return [check_pipeline(p, files=files, options=options, cache=cache) for p in paths]


def _alone(paths: list[Path]) -> list[Any]:
    """Each pipeline checked with nothing shared (a RunFiles and a cache of its own)."""
    return [check_pipeline(p, files=DiskFiles(), options=CheckOptions(environ={}))
            for p in paths]


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> Counter[str]:
    calls: Counter[str] = Counter()
    # the check's code spans three modules: count the calls made from any of them
    modules = [m for m in (check_module, planner_module, step_plan_module) if hasattr(m, name)]
    real = getattr(modules[0], name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls[name] += 1
        return real(*args, **kwargs)

    for module in modules:
        monkeypatch.setattr(module, name, counted)
    return calls


@pytest.mark.parametrize("model", [None, "no-such-model-1"])
def test_config_limits_are_made_once_per_config_of_a_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, model: str | None) -> None:
    config: dict[str, Any] = {"model_context_window": 4096, "model_max_tokens": 100}
    if model is not None:  # an unknown model: a warning every pipeline reports
        config["model"] = model
    paths = _workspace(tmp_path, config)
    expected = _alone(paths)
    calls = _counting(monkeypatch, "config_limits")
    got = _run(paths, RunFiles(DiskFiles(), resolve_by_folder=True), BudgetCache())
    assert calls["config_limits"] == 1
    assert got == expected
    if model is not None:
        assert all(any(d.code == "BL061" and "no-such-model-1" in d.message
                       for d in r.diagnostics) for r in got)
    calls.clear()
    _run(paths, RunFiles(DiskFiles()), BudgetCache())  # a new run asks again, once
    assert calls["config_limits"] == 1


def test_the_tokenizer_is_found_once_per_name_and_folder_of_a_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _workspace(tmp_path, {"model_context_window": 4096, "tokenizer": "o200k_base"})
    expected = _alone(paths)
    calls = _counting(monkeypatch, "get_tokenizer")
    got = _run(paths, RunFiles(DiskFiles(), resolve_by_folder=True), BudgetCache())
    assert calls["get_tokenizer"] == 1
    assert got == expected and {r.tokenizer for r in got} == {"o200k_base"}


def test_a_bad_tokenizer_is_reported_for_every_pipeline_of_a_run(
        tmp_path: Path) -> None:
    paths = _workspace(tmp_path, {"model_context_window": 4096, "tokenizer": "nope_base"})
    got = _run(paths, RunFiles(DiskFiles(), resolve_by_folder=True), BudgetCache())
    assert got == _alone(paths)
    assert all(any(d.code == "BL014" for d in r.diagnostics) for r in got)


def test_each_path_of_the_chain_is_made_absolute_once_per_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _workspace(tmp_path, {"model_context_window": 4096})
    monkeypatch.chdir(tmp_path)
    relative = [Path(os.path.relpath(p)) for p in paths]
    calls: Counter[str] = Counter()
    abspath = os.path.abspath

    def counting(path: Any) -> str:
        calls[os.fspath(path)] += 1
        return str(abspath(path))

    monkeypatch.setattr(os.path, "abspath", counting)
    _run(relative, RunFiles(DiskFiles(), resolve_by_folder=True), BudgetCache())
    # each pipeline, its parent and the root asked for once (before: each pipeline's path
    # twice more, by the root check and the cycle check of its extends link)
    assert max(calls.values()) == 1, calls
    assert calls[os.path.join("pipelines", "flow0.yaml")] == 1
    assert calls[os.path.join("pipelines", "base.yaml")] == 1


def test_the_folder_of_config_json_is_made_once() -> None:
    config = LoadedConfig(os.path.join("ws", "config.json"), None, True)
    assert "directory" not in config.__dict__
    assert config.directory == "ws"
    assert config.__dict__["directory"] == "ws"  # kept: the next read is an attribute
    assert LoadedConfig("config.json", None, True).directory == "."


def test_the_shared_terms_are_copied_only_for_inherited_steps(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _workspace(tmp_path, {"model_context_window": 4096})
    own = tmp_path / "pipelines" / "base.yaml"  # a pipeline with its own steps
    copies: list[bool] = []
    real = dataclasses.replace

    def counted(obj: Any, **changes: Any) -> Any:
        if isinstance(obj, check_module._Shared):
            copies.append(changes["inherited"])
        return real(obj, **changes)

    monkeypatch.setattr(planner_module, "replace", counted)
    check_pipeline(own, files=DiskFiles(), options=CheckOptions(environ={}))
    assert copies == []
    report = check_pipeline(paths[0], files=DiskFiles(), options=CheckOptions(environ={}))
    assert copies == [True] and report.steps[0].inherited


def _inheriting_workspace(root: Path) -> list[Path]:
    """Pipelines that extend one parent, which sets three settings (one overridden)."""
    pipelines = {"base.yaml": "settings:\n  max_context_tokens: 1000\n"
                              "  max_history_tokens: 300\n  budget_safety_margin_tokens: 50\n"
                              "steps:\n  - id: one\n    type: call_model\n    prompt_key: p\n"
                              "    use_history: true\n    max_output_tokens: 100\n"}
    for i in range(PIPELINES):
        pipelines[f"flow{i}.yaml"] = (f"extends: base.yaml\nsettings:\n"
                                      f"  max_context_tokens: {1000 + i}\n")
    make_workspace(root, config={"model_context_window": 4096, "format_overhead_tokens": 8},
                   pipelines=pipelines, prompts={"p.txt": "hello"})
    return [root / "pipelines" / f"flow{i}.yaml" for i in range(PIPELINES)]


def test_a_parents_settings_are_made_once_per_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _inheriting_workspace(tmp_path)
    expected = _alone(paths)
    calls: Counter[str] = Counter()
    real = planner_module.file_settings

    def counted(pf: Any, depth: int) -> Any:
        calls[os.path.basename(pf.path)] += 1
        return real(pf, depth)

    monkeypatch.setattr(planner_module, "file_settings", counted)
    got = _run(paths, RunFiles(DiskFiles(), resolve_by_folder=True), BudgetCache())
    assert got == expected
    assert calls["base.yaml"] == 1  # each child's own settings are its own
    assert {s.history.value for r in got for s in r.steps} == {300}
    assert {s.margin.value for r in got for s in r.steps} == {50}
    calls.clear()
    _run(paths, RunFiles(DiskFiles()), BudgetCache())  # a new run makes them again, once
    assert calls["base.yaml"] == 1


def test_the_format_overhead_term_is_made_once_per_config_of_a_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _inheriting_workspace(tmp_path)
    expected = _alone(paths)
    calls = _counting(monkeypatch, "_overhead_term")
    got = _run(paths, RunFiles(DiskFiles(), resolve_by_folder=True), BudgetCache())
    assert got == expected
    assert calls["_overhead_term"] == 1
    assert {s.format_overhead.value for r in got for s in r.steps} == {8}


def test_the_default_output_floor_is_made_once_per_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = _inheriting_workspace(tmp_path)
    expected = _alone(paths)
    step_plan_module._half_output.cache_clear()
    calls = _counting(monkeypatch, "floor_below")
    got = _run(paths, RunFiles(DiskFiles(), resolve_by_folder=True), BudgetCache())
    assert got == expected
    # one output limit (100) in every pipeline; the context floor is per pipeline
    output_floors = calls["floor_below"] - PIPELINES
    assert output_floors == 1
    assert {s.output_floor.value for r in got for s in r.steps} == {50}
