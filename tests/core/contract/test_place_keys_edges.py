"""The editor cache keyed by the real paths of its inputs (``RunFiles.place``), at its
edges: found by a review of 8c8388c (review26), each failing before its fix. Each test
compares a check answered through a ``BudgetCache`` kept between calls (a new ``RunFiles``
per call) with a fresh check (a new cache), or ``RunFiles.place`` with
``os.path.realpath(os.path.abspath(path))``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from budgetlens.contract.cache import BudgetCache
from budgetlens.files import DiskFiles, RunFiles
from tests.core.contract.helpers import make_workspace
from tests.core.contract.place_helpers import (
    BY_FOLDER,
    CONFIG,
    PIPELINE,
    cached_and_fresh,
    check_codes,
)
from tests.outside_links import relink, workspace_of_links

BROKEN = "steps: [\n"  # not YAML: the pipeline is unusable (the check's early return)
MISSING_PARENT = ("extends: gone.yaml\nsteps:\n  - id: s\n    type: call_model\n"
                  "    prompt_key: sys\n    max_output_tokens: 100\n")



@BY_FOLDER
@pytest.mark.parametrize("text", [BROKEN, MISSING_PARENT], ids=["not-yaml", "missing-parent"])
def test_unusable_pipeline_in_a_workspace_relinked_to_a_folder_of_links(
        tmp_path: Path, by_folder: bool, text: str) -> None:
    """A pipeline the check stops early on (not YAML, or its only parent missing) is kept
    with the place of ``"."`` (the ``_Plan`` default ``prompt_root``), not of the workspace
    root it was checked against (config.json's folder). The workspace relinked to a folder
    of links to the same files (as in test_place_keys): every input keeps its real path and
    fingerprint (config.json is now a link, which the link stamps before 8c8388c saw), so
    the cache answers the old error where a fresh check says the pipeline resolves outside
    the workspace (BL007)."""
    real = make_workspace(tmp_path / "A", config=CONFIG, pipelines={"p.yaml": text},
                          prompts={"sys.txt": "a prompt\n"})
    ws, links = workspace_of_links(tmp_path, real)
    pipeline = ws / "pipelines" / "p.yaml"
    cache = BudgetCache()
    first = check_codes(pipeline, cache, by_folder)
    assert "BL007" not in first
    relink(ws, links)
    cached, fresh = cached_and_fresh(pipeline, cache, by_folder)
    assert "BL007" in fresh
    assert cached == fresh


def _dangling_dotdot(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    """``ws/prompts`` a link to ``gone/../p`` (``gone`` missing: the kernel cannot follow
    it, ``os.path.realpath`` drops ``gone/..`` as written and lands in ``ws/p``), and
    ``ws/p/sys.txt`` a link to a file inside (``ws/kept``). Returns (ws, the prompt as the
    pipeline names it, the link ws/p/sys.txt, a file outside the workspace)."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG, pipelines={"p.yaml": PIPELINE})
    (ws / "p").mkdir()
    (ws / "kept").mkdir()
    (ws / "kept" / "sys.txt").write_text("a prompt\n", "utf-8")
    outside = tmp_path / "outside.txt"
    outside.write_text("a prompt\n", "utf-8")
    os.symlink("gone/../p", ws / "prompts")
    link = ws / "p" / "sys.txt"
    os.symlink(ws / "kept" / "sys.txt", link)
    return ws, ws / "prompts" / "sys.txt", link, outside


@BY_FOLDER
def test_place_is_realpath_under_a_link_the_kernel_cannot_follow(
        tmp_path: Path, by_folder: bool) -> None:
    """``_by_folder`` asks ``lstat`` of the path as named, which fails when a folder on it
    is a link the kernel cannot follow, and then appends the name to the folder's
    (lexically) resolved path; ``os.path.realpath`` looks at the name *in that resolved
    folder*, where it is a link, and follows it."""
    _ws, prompt, link, outside = _dangling_dotdot(tmp_path)
    relink(link, outside)
    want = os.path.realpath(os.path.abspath(prompt))
    assert want == str(outside)
    assert RunFiles(DiskFiles(), resolve_by_folder=by_folder).place(str(prompt)) == want


def test_prompt_under_a_link_the_kernel_cannot_follow_relinked_outside(
        tmp_path: Path) -> None:
    """The same over the cache: the prompt (missing for the kernel) is judged inside the
    workspace by ``os.path.realpath`` and reported unreadable; its link relinked outside, a
    fresh check reports it outside (BL041), but its place key (``ws/p/sys.txt``) and
    fingerprint (missing) are unchanged, so the cache answers the old report."""
    ws, _prompt, link, outside = _dangling_dotdot(tmp_path)
    pipeline = ws / "pipelines" / "p.yaml"
    cache = BudgetCache()
    check_codes(pipeline, cache)
    relink(link, outside)
    cached, fresh = cached_and_fresh(pipeline, cache, False)
    assert cached == fresh


@BY_FOLDER
@pytest.mark.parametrize("where", ["pipeline", "config_path"])
def test_a_nul_in_an_input_path_is_a_diagnostic_not_a_crash(
        tmp_path: Path, by_folder: bool, where: str) -> None:
    """A pipeline path (an editor's URI with ``%00``) or a ``config_path`` option holding a
    NUL byte: the check records the path as an input, and ``with_places`` asks its place,
    which ``_by_folder`` leaves to ``os.path.realpath``: ``ValueError: embedded null byte``
    out of ``check_pipeline`` (which never raises for bad input). Before 8c8388c the place
    of an input was its ``link_stamp`` (which takes the ``ValueError``): BL007/BL011."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG, pipelines={"p.yaml": PIPELINE},
                        prompts={"sys.txt": "a prompt\n"})
    if where == "pipeline":
        pipeline, options = str(ws / "pipelines" / "p\0.yaml"), {}
    else:
        pipeline = str(ws / "pipelines" / "p.yaml")
        options = {"config_path": str(ws / "config\0.json")}
    cache = BudgetCache()
    first = check_codes(pipeline, cache, by_folder, **options)
    assert first and any(code in first for code in ("BL007", "BL011"))
    assert cached_and_fresh(pipeline, cache, by_folder, **options) == (first, first)


@BY_FOLDER
def test_no_config_pipeline_folder_relinked_with_dangling_probes(
        tmp_path: Path, by_folder: bool) -> None:
    """Without a config.json the pipeline is judged against its own folder
    (``_Planner.root``: ``dirname(pipe)``) but the cache keeps the place of ``"."``
    (``prompt_root``). The pipeline a link to ``X/p.yaml`` and its folder ``ws/pipelines`` a
    link to ``X``; each folder's config.json a dangling link (so the probe's place is the
    link's target, not the folder's). Relinked to a folder ``C`` of the same links, the
    pipeline lies outside its folder (BL007, fresh), though every input keeps its real path
    and fingerprint: the cache answers without BL007. Before 8c8388c the pipeline's own
    link (another inode in ``C``) was seen."""
    x, c, ws = tmp_path / "X", tmp_path / "C", tmp_path / "ws"
    for d in (x, c, ws):
        d.mkdir()
    (x / "p.yaml").write_text(PIPELINE, "utf-8")
    for d in (x, c):
        os.symlink(tmp_path / "nowhere" / "config.json", d / "config.json")
    os.symlink(x / "p.yaml", c / "p.yaml")
    os.symlink(x, ws / "pipelines")
    pipeline = ws / "pipelines" / "p.yaml"
    cache = BudgetCache()
    assert "BL007" not in check_codes(pipeline, cache, by_folder)
    relink(ws / "pipelines", c)
    cached, fresh = cached_and_fresh(pipeline, cache, by_folder)
    assert "BL007" in fresh
    assert cached == fresh
