"""An input relinked across the workspace's edge to the *same file* keeps its stat (inode,
times, size, mode), so neither the result cache nor a recorded answer may take an equal stat
alone as "unchanged": where the file really lies is part of every input's fingerprint, and
so is where its folder lies (the workspace root is the folder of config.json, or of the
pipeline: a workspace relinked to a folder of links to the same files puts the pipeline
outside it). docs/cli.md, "What decides a hit": the same real path.

Found by a review (review25); each test failed before the fix.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from budgetlens_cli import cache as result_cache
from tests.cli.cache_helpers import CONFIG, STEP, clean_environment, replayed, run
from tests.core.contract.helpers import make_workspace

__all__ = ["clean_environment", "replayed"]


def _linked_prompt(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A workspace whose prompt is a link to a file in it that is also hard-linked outside:
    (workspace, the link, the outside name of the same file)."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG, pipelines={"a.yaml": STEP})
    (ws / "data").mkdir()
    (ws / "prompts").mkdir()
    inside = ws / "data" / "p.txt"
    inside.write_text("Be helpful.\n", "utf-8")
    outside = tmp_path / "outside" / "p.txt"
    outside.parent.mkdir()
    os.link(inside, outside)  # the same file, also reachable from outside the workspace
    link = ws / "prompts" / "p.txt"
    os.symlink(inside, link)
    return ws, link, outside


@pytest.mark.parametrize("target", ["ws", "ws/pipelines/a.yaml"])
@pytest.mark.parametrize("replay", [False, True])
def test_a_prompt_relinked_outside_to_a_hard_link_of_the_same_file_is_checked_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        replay: bool, target: str, replayed: list[int]) -> None:
    if replay:  # files written by the test count as settled: the answer is recorded too
        monkeypatch.setattr(result_cache, "RACY_NS", 0)
    _ws, link, outside = _linked_prompt(tmp_path)
    monkeypatch.chdir(tmp_path)
    first = run(capsys, "check", target)
    assert first[0] == 0 and "BL041" not in first[1]
    if replay:
        assert run(capsys, "check", target) == first
        assert replayed[-1] == 1  # the answer is recorded

    link.unlink()
    os.symlink(outside, link)  # now the prompt resolves outside the workspace
    fresh = run(capsys, "check", target, "--no-cache")
    assert fresh[0] == 1 and "BL041" in fresh[1]
    assert run(capsys, "check", target) == fresh
    assert run(capsys, "check", target) == fresh


@pytest.mark.parametrize("rewritten", [False, True])
def test_a_workspace_relinked_to_a_folder_of_links_to_the_same_files_is_checked_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], rewritten: bool) -> None:
    """``ws`` is relinked from folder ``A`` to folder ``B``, whose config.json, pipelines and
    prompts are links into ``A``: every input is the same file with the same real path, but
    the workspace root (config.json's folder, ``ws``) now lies in ``B``, so the pipeline and
    its prompt are outside it (BL007). With ``rewritten`` every file is saved again with the
    same bytes, so the entry is matched by content, not by stat."""
    real = make_workspace(tmp_path / "A", config=CONFIG, prompts={"p.txt": "Be helpful.\n"},
                          pipelines={"a.yaml": STEP})
    links = tmp_path / "B"
    links.mkdir()
    for name in ("config.json", "pipelines", "prompts"):
        os.symlink(real / name, links / name)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    os.symlink(real, cwd / "ws")
    monkeypatch.chdir(cwd)
    monkeypatch.setattr(result_cache, "RACY_NS", 0)
    first = run(capsys, "check", "ws")
    assert first[0] == 0

    (cwd / "ws").unlink()
    os.symlink(links, cwd / "ws")
    if rewritten:
        for path in (real / "config.json", real / "pipelines" / "a.yaml",
                     real / "prompts" / "p.txt"):
            path.write_bytes(path.read_bytes())
    fresh = run(capsys, "check", "ws", "--no-cache")
    assert fresh[0] == 1 and "BL007" in fresh[1]
    assert run(capsys, "check", "ws") == fresh
    assert run(capsys, "check", "ws") == fresh


def test_an_unchanged_linked_workspace_still_replays_and_reads_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], replayed: list[int]) -> None:
    """Where the inputs lie is compared, not re-derived by reading them: a workspace reached
    through links keeps its answer and its entries."""
    real = make_workspace(tmp_path / "A", config=CONFIG, prompts={"p.txt": "Be helpful.\n"},
                          pipelines={"a.yaml": STEP})
    (tmp_path / "cwd").mkdir()
    os.symlink(real, tmp_path / "cwd" / "ws")
    monkeypatch.chdir(tmp_path / "cwd")
    monkeypatch.setattr(result_cache, "RACY_NS", 0)
    first = run(capsys, "check", "ws/pipelines/a.yaml")
    replayed.clear()
    assert run(capsys, "check", "ws/pipelines/a.yaml") == first
    assert replayed[-1] == 1


def test_the_replay_fingerprint_of_an_input_is_its_stat_and_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A replay's one-``lstat`` fingerprint of an input is what a run records: the stat
    (``disk_fingerprint``) with where the file lies (``location_of``), for every shape of
    path an input may have."""
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "a.txt").write_text("a\n", "utf-8")
    os.symlink(tmp_path / "real", tmp_path / "linked")
    os.symlink(tmp_path / "real" / "a.txt", tmp_path / "real" / "link.txt")
    os.symlink(tmp_path / "nowhere", tmp_path / "real" / "dangling.txt")
    monkeypatch.chdir(tmp_path)
    paths = ["real/a.txt", "linked/a.txt", "real/link.txt", "linked/link.txt",
             "real/dangling.txt", "real/missing.txt", "linked/../real/a.txt", "./real/a.txt",
             str(tmp_path / "linked" / "a.txt"), "a.txt", "real/"]
    folders: dict[str, tuple[str, str]] = {}
    for path in paths:
        expected = f"{result_cache.disk_fingerprint(path)}@{result_cache.location_of(path, {})}"
        assert result_cache.input_fingerprint(path, folders) == expected, path
    assert result_cache.location_of("linked/a.txt", {}) != ""
    assert result_cache.location_of("real/a.txt", {}) == ""
