"""The editor cache keyed by the real paths of its inputs (``RunFiles.place``) and by the
current folder when a path is relative: found by a second review of 8c8388c / 85f2f56
(review26b), each failing before its fix. Each test compares a check answered through
a ``BudgetCache`` kept between calls (a new ``RunFiles`` per call) with a fresh check (a
new cache), or ``RunFiles.place`` with ``os.path.realpath(os.path.abspath(path))``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.check import CheckOptions, check_pipeline
from budgetlens.files import DiskFiles, RunFiles
from tests.core.contract.helpers import codes_of, make_workspace
from tests.core.contract.place_helpers import (
    BY_FOLDER,
    CONFIG,
    PIPELINE,
    cached_and_fresh,
    check_codes,
)
from tests.outside_links import relink


def _two_folders_linking_one_pipeline(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A workspace ``ws`` (config.json, prompts), a pipeline file outside it
    (``elsewhere/p.yaml``), and two folders each holding a link ``p.yaml`` (and a link
    ``config.json``) to those very files: ``out`` outside the workspace, ``ws/sub`` inside.
    Returns (ws, out, ws/sub)."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG, prompts={"sys.txt": "a prompt\n"})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "p.yaml").write_text(PIPELINE)
    out, sub = tmp_path / "out", ws / "sub"
    for folder in (out, sub):
        folder.mkdir()
        os.symlink(elsewhere / "p.yaml", folder / "p.yaml")
        os.symlink(ws / "config.json", folder / "config.json")
    return ws, out, sub


@BY_FOLDER
@pytest.mark.parametrize("option", ["config_path", "workspace_root"])
def test_relative_pipeline_checked_again_from_another_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by_folder: bool,
        option: str) -> None:
    """A relative pipeline path is judged "inside the workspace as named" from the current
    folder (``abspath``), but the cache keys only its real path (and the real paths of the
    other inputs and roots, all absolute here or links to the same files): checked from a
    folder outside the workspace (named outside: read, no error), then from one inside it
    (named inside, resolving outside: BL007), the cache answers the first all-clear."""
    ws, out, sub = _two_folders_linking_one_pipeline(tmp_path)
    opts = ({"config_path": str(ws / "config.json")} if option == "config_path"
            else {"workspace_root": str(ws)})
    cache = BudgetCache()
    monkeypatch.chdir(out)
    first = check_codes("p.yaml", cache, by_folder, **opts)
    assert "BL007" not in first
    monkeypatch.chdir(sub)
    cached, fresh = cached_and_fresh("p.yaml", cache, by_folder, **opts)
    assert "BL007" in fresh
    assert cached == fresh


class _RelinkAfterRead(DiskFiles):
    """Disk files; once ``prompt`` has been read, its link is pointed at ``target`` (an
    editor, a sync tool or a checkout moving files while a check runs)."""

    def __init__(self, prompt: Path, target: Path) -> None:
        super().__init__()
        self.prompt, self.target, self.done = prompt, target, False

    def read_text_utf8(self, path: Path) -> tuple[str, bytes | None]:
        got = super().read_text_utf8(path)
        if not self.done and os.path.abspath(path) == str(self.prompt):
            self.done = True
            relink(self.prompt, self.target)
        return got


def test_place_is_taken_after_the_check_judged_the_prompt(tmp_path: Path) -> None:
    """A library caller (``RunFiles(base)``, ``resolve_by_folder=False``): the check judges
    the prompt inside with ``RunFiles.realpath`` (``os.path.realpath``, memoised), but
    ``with_places`` asks ``RunFiles.place`` afresh after the check (its own ``_places``
    memo, a new ``lstat``). The prompt's link relinked outside, to a hard link of the very
    same file, while the check runs: the report (prompt counted, no error) is stored under
    the *new* place, so every later check finds it current and answers the all-clear where
    a fresh check says the prompt resolves outside the workspace (BL041). With
    ``resolve_by_folder=True`` the place is the check's own memo and the cache misses."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG, pipelines={"p.yaml": PIPELINE})
    (ws / "data").mkdir()
    (ws / "data" / "sys.txt").write_text("a prompt\n", "utf-8")
    outside = tmp_path / "outside.txt"
    os.link(ws / "data" / "sys.txt", outside)  # the very same file (same fingerprint)
    (ws / "prompts").mkdir()
    prompt = ws / "prompts" / "sys.txt"
    os.symlink(ws / "data" / "sys.txt", prompt)
    pipeline = ws / "pipelines" / "p.yaml"
    cache = BudgetCache()
    first = sorted(codes_of(check_pipeline(
        pipeline, files=RunFiles(_RelinkAfterRead(prompt, outside)),
        options=CheckOptions(environ={}), cache=cache)))
    assert "BL041" not in first  # judged while the link pointed inside
    cached, fresh = cached_and_fresh(pipeline, cache, False)
    assert "BL041" in fresh
    assert cached == fresh


NO_PROMPT = ("settings:\n  max_context_tokens: 1000\nsteps:\n  - id: s\n    type: call_model\n"
             "    max_output_tokens: 100\n")


@BY_FOLDER
def test_relative_workspace_root_checked_again_from_another_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by_folder: bool) -> None:
    """The same with a relative ``workspace_root`` option (``"ws"``) and an absolute
    pipeline: ``x/ws`` and ``y/ws`` are links to one workspace folder, so the root's place
    key is the same from ``x`` and from ``y``; the pipeline ``x/ws/p.yaml`` (a link to a file
    outside) is named outside the root from ``y`` (read: no error) and inside it from ``x``
    (BL007). The cache answers the all-clear of ``y``."""
    real = make_workspace(tmp_path / "real", config=CONFIG)
    elsewhere = tmp_path / "elsewhere.yaml"
    elsewhere.write_text(NO_PROMPT)
    os.symlink(elsewhere, real / "p.yaml")
    for name in ("x", "y"):
        (tmp_path / name).mkdir()
        os.symlink(real, tmp_path / name / "ws")
    pipeline = str(tmp_path / "x" / "ws" / "p.yaml")
    cache = BudgetCache()
    monkeypatch.chdir(tmp_path / "y")
    first = check_codes(pipeline, cache, by_folder, workspace_root="ws")
    assert "BL007" not in first
    monkeypatch.chdir(tmp_path / "x")
    cached, fresh = cached_and_fresh(pipeline, cache, by_folder, workspace_root="ws")
    assert "BL007" in fresh
    assert cached == fresh


@BY_FOLDER
def test_relative_tokenizer_option_checked_again_from_another_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, by_folder: bool) -> None:
    """A relative ``tokenizer`` option naming a tokenizer.json of a pipeline without
    config.json is taken from the current folder (``tokenizer_file``: ``abspath``); with an
    absolute ``workspace_root`` (so no root is ``"."``) the report is stored under that
    absolute path's fingerprint and the option's text, so from another folder (whose
    ``tok.json`` is no tokenizer) the cache answers the first folder's report (no BL014)
    while a fresh check reports it."""
    from tests.tokenizer_files import tokenizer_json

    ws = tmp_path / "ws"
    ws.mkdir()
    pipeline = ws / "p.yaml"
    pipeline.write_text(NO_PROMPT)
    for name, text in (("a", tokenizer_json(per_character=False)), ("b", "not json\n")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "tok.json").write_text(text, "utf-8")
    cache = BudgetCache()
    monkeypatch.chdir(tmp_path / "a")
    first = check_codes(pipeline, cache, by_folder, tokenizer="tok.json", workspace_root=str(ws))
    assert "BL014" not in first
    monkeypatch.chdir(tmp_path / "b")
    cached, fresh = cached_and_fresh(pipeline, cache, by_folder, tokenizer="tok.json",
                          workspace_root=str(ws))
    assert "BL014" in fresh
    assert cached == fresh
