"""``discovery.sorted_paths``: the order of ``sorted`` on paths (``Path.__lt__``), with the
parts taken once per path; names where the order of the parts and of the strings differ."""

from __future__ import annotations

import os
import random
from pathlib import Path

import pytest

from budgetlens.contract import discovery
from budgetlens.contract.discovery import find_pipelines, sorted_paths

NAMES = ["a-b/x", "a/x", "A/x", "a/b/c", "a.b/x", "a b/x", "/abs/x", "/abs-x/y", "a/x-y",
         "a/x/y", "é/x", "z", "Z/y", "a//b", "./a/x", "b/pipelines/f.yaml",
         "b-c/pipelines/f.yaml", "b/pipelines/f.yml", "b/pipelines/F.yaml"]


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("kind", ["relative", "absolute", "mixed"])
def test_sorted_paths_is_sorted(seed: int, kind: str) -> None:
    names = [n for n in NAMES if not n.startswith("/")]
    if kind == "absolute":
        names = ["/" + n for n in names]
    elif kind == "mixed":
        names = NAMES
    paths = [Path(n) for n in names]
    random.Random(seed).shuffle(paths)
    assert sorted_paths(paths) == sorted(paths)


def test_find_pipelines_keeps_its_order(tmp_path: Path) -> None:
    for folder in ("a", "a-b", "a/c", "B"):
        (tmp_path / folder / "pipelines").mkdir(parents=True)
        for name in ("x.yaml", "x-y.yaml", "X.yml"):
            (tmp_path / folder / "pipelines" / name).write_text("{}\n", "utf-8")
    found = find_pipelines(tmp_path)
    assert len(found) == 12
    assert found == sorted(found)


def test_the_parts_are_taken_once_per_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """The key of each path is made once, not at every comparison."""
    calls: list[Path] = []
    parts = discovery._parts

    def counting(path: Path) -> tuple[str, ...]:
        calls.append(path)
        return parts(path)

    monkeypatch.setattr(discovery, "_parts", counting)
    paths = [Path(f"w/p{i % 7}/pipelines/flow{i:04d}.yaml") for i in range(500)]
    random.Random(1).shuffle(paths)
    assert sorted_paths(paths) == sorted(paths)
    if os.name == "posix":
        assert len(calls) == len(paths)


def test_a_folder_no_ignore_file_applies_to_is_judged_once_not_per_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside a repository no .gitignore applies: the search asks git's rules once per
    folder, not once per pipeline (1,000 pipelines: 1,000 path look-ups saved at open)."""
    folder = tmp_path / "ws" / "pipelines"
    folder.mkdir(parents=True)
    for i in range(50):
        (folder / f"p{i:02d}.yaml").write_text("steps: []\n", "utf-8")
    judged: list[tuple[str, bool]] = []
    plain = discovery.GitIgnored.__call__

    def spy(self: discovery.GitIgnored, path: str, is_dir: bool) -> bool:
        judged.append((path, is_dir))
        return plain(self, path, is_dir)

    monkeypatch.setattr(discovery.GitIgnored, "__call__", spy)
    found = discovery.find_pipelines(tmp_path / "ws", discovery.default_excluded())
    assert [p.name for p in found] == [f"p{i:02d}.yaml" for i in range(50)]
    assert [path for path, is_dir in judged if not is_dir] == []
