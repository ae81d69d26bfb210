"""``discovery.project_root``: the root a pipeline is checked under whatever folder a
client chose, the same config.json ``budgetlens check`` finds; and ``pipeline_config``'s
search for that config.json, made once per folder and run (``RunFiles.remembered``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.check import check_pipeline
from budgetlens.contract.discovery import project_root
from budgetlens.contract.results import CheckOptions
from budgetlens.files import DiskFiles, RunFiles


def _tree(root: Path, *files: str) -> None:
    for rel in files:
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("{}", "utf-8")


def test_a_config_inside_the_workspace_keeps_the_workspace_root(tmp_path: Path) -> None:
    _tree(tmp_path, "config.json", "ws/config.json", "ws/pipelines/p.yaml")
    ws = str(tmp_path / "ws")
    assert project_root(str(tmp_path / "ws/pipelines/p.yaml"), ws) == ws


def test_a_config_above_the_workspace_folder_becomes_the_root(tmp_path: Path) -> None:
    _tree(tmp_path, "project/config.json", "project/pipelines/p.yaml")
    pipelines = str(tmp_path / "project/pipelines")
    assert project_root(pipelines + "/p.yaml", pipelines) == str(tmp_path / "project")


def test_no_config_anywhere_keeps_the_workspace_root(tmp_path: Path) -> None:
    _tree(tmp_path, "ws/pipelines/p.yaml")
    ws = str(tmp_path / "ws")
    assert project_root(ws + "/pipelines/p.yaml", ws,
                        exists=lambda p: p.startswith(str(tmp_path)) and Path(p).is_file()
                        ) == ws
    assert project_root(ws + "/pipelines/p.yaml", None) is None


# ------------------------------------------------- the config.json search, once per folder
_PIPELINE = """settings:
  max_context_tokens: 100
steps:
  - id: s
    type: call_model
    prompt_key: p
    max_output_tokens: 10
"""


def _workspace(root: Path, folders: tuple[str, ...], per_folder: int) -> list[Path]:
    (root / "config.json").write_text('{"model_context_window": 4096}', "utf-8")
    (root / "prompts").mkdir()
    (root / "prompts" / "p.txt").write_text("You are terse.\n", "utf-8")
    out = []
    for folder in folders:
        (root / folder).mkdir(parents=True)
        for i in range(per_folder):
            path = root / folder / f"p{i}.yaml"
            path.write_text(_PIPELINE, "utf-8")
            out.append(path)
    return out


def _count_searches(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The start folder of every ``find_config`` search."""
    from budgetlens.contract import config

    starts: list[str] = []
    find = config.find_config

    def counting(start_dir: str, *args: Any, **kwargs: Any) -> Any:
        starts.append(start_dir)
        return find(start_dir, *args, **kwargs)

    monkeypatch.setattr(config, "find_config", counting)
    return starts


class _CountingDisk(DiskFiles):
    """``DiskFiles`` counting its fingerprints (one ``stat`` each) per path."""

    def __init__(self) -> None:
        super().__init__()
        self.stats: Counter[str] = Counter()

    def fingerprint(self, path: Path | str) -> str:
        self.stats[str(path)] += 1
        return super().fingerprint(path)


def test_each_folder_is_searched_for_config_json_once_per_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pipelines = _workspace(tmp_path, ("pipelines", "team/pipelines"), 12)
    options = CheckOptions(environ={})
    # the answers of one search per pipeline, each with its own RunFiles
    alone = [check_pipeline(p, files=DiskFiles(), options=options, cache=BudgetCache())
             for p in pipelines]
    starts = _count_searches(monkeypatch)
    disk = _CountingDisk()
    run, cache = RunFiles(disk), BudgetCache()

    reports = [check_pipeline(p, files=run, options=options, cache=cache) for p in pipelines]

    assert sorted(starts) == sorted({str(p.parent) for p in pipelines})  # 2 searches, not 24
    config = str(tmp_path / "config.json")
    probed = [str(tmp_path / "pipelines" / "config.json"),
              str(tmp_path / "team" / "pipelines" / "config.json"),
              str(tmp_path / "team" / "config.json"), config]
    assert all(disk.stats[p] == 1 for p in probed), disk.stats  # each place stat'ed once
    for got, expected in zip(reports, alone, strict=True):
        assert got.config == expected.config == config
        assert got.diagnostics == expected.diagnostics
        assert [s.summary for s in got.steps] == [s.summary for s in expected.steps]
        assert got.inputs == expected.inputs


def test_a_later_pipeline_of_a_folder_records_every_place_probed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The search is remembered, not its record: a config.json created later at a place the
    search passed invalidates the cached report of every pipeline of the folder."""
    first, second = _workspace(tmp_path, ("team/pipelines",), 2)
    options = CheckOptions(environ={})
    cache = BudgetCache()
    run = RunFiles(DiskFiles())
    check_pipeline(first, files=run, options=options, cache=cache)
    starts = _count_searches(monkeypatch)
    check_pipeline(second, files=run, options=options, cache=cache)
    assert starts == []  # the second pipeline took the folder's answer

    nearer = tmp_path / "team" / "config.json"
    nearer.write_text('{"model_context_window": 2048}', "utf-8")
    again = check_pipeline(second, files=RunFiles(DiskFiles()), options=options, cache=cache)
    assert again.config == str(nearer)
    assert again.window is not None and again.window.value == 2048
    assert starts == [str(second.parent)]  # a new run searches again


def test_an_explicit_config_is_not_searched_for(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    pipelines = _workspace(tmp_path, ("pipelines",), 3)
    starts = _count_searches(monkeypatch)
    options = CheckOptions(environ={}, config_path=tmp_path / "config.json")
    run, cache = RunFiles(DiskFiles()), BudgetCache()
    reports = [check_pipeline(p, files=run, options=options, cache=cache) for p in pipelines]
    assert starts == []
    assert {r.config for r in reports} == {str(tmp_path / "config.json")}
