"""A report and a structure in the ``BudgetCache`` are kept for where their files lie, not
only for their fingerprints: a link relinked across the workspace's edge to the very same
file (a hard link of it, so the same inode, times and size) is another input, and so is a
workspace relinked to a folder of links to the same files (its root moved). Found by a
review of the CLI's result cache (review25); the editor's cache had the same gap."""

from __future__ import annotations

import os
from pathlib import Path

from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.check import CheckOptions, check_pipeline
from budgetlens.files import DiskFiles, RunFiles
from tests.core.contract.helpers import codes_of, make_workspace
from tests.core.contract.place_helpers import BY_FOLDER
from tests.outside_links import extends_outside, relink, workspace_of_links

CONFIG = {"model_context_window": 8192, "model_max_tokens": 512, "prompts_dir": "prompts"}
PIPELINE = ("settings:\n  max_context_tokens: 1000\nsteps:\n  - id: s\n    type: call_model\n"
            "    prompt_key: sys\n    max_output_tokens: 100\n")


def _check(pipeline: Path, cache: BudgetCache, by_folder: bool = False) -> list[str]:
    return codes_of(check_pipeline(pipeline,
                                   files=RunFiles(DiskFiles(), resolve_by_folder=by_folder),
                                   options=CheckOptions(environ={}), cache=cache))


def test_a_prompt_relinked_outside_to_the_same_file_is_checked_again(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", config=CONFIG, pipelines={"p.yaml": PIPELINE},
                        prompts={})
    (ws / "prompts").mkdir()
    (ws / "kept").mkdir()
    inside = ws / "kept" / "sys.txt"
    inside.write_text("a prompt\n", "utf-8")
    outside = tmp_path / "sys.txt"
    os.link(inside, outside)  # the same file, reachable from outside too
    link = ws / "prompts" / "sys.txt"
    os.symlink(inside, link)
    pipeline = ws / "pipelines" / "p.yaml"
    cache = BudgetCache()
    assert "BL041" not in _check(pipeline, cache)
    assert _check(pipeline, cache) == [] and cache.hits == 1  # unchanged: from the cache
    relink(link, outside)
    assert "BL041" in _check(pipeline, cache)
    relink(link, inside)
    assert "BL041" not in _check(pipeline, cache)


def test_an_extends_parent_relinked_outside_to_the_same_file_is_checked_again(
        tmp_path: Path) -> None:
    ws, link, _outside, inside = extends_outside(tmp_path)
    relink(link, inside)
    outside = tmp_path / "hard-base.yaml"
    os.link(inside, outside)
    pipeline = ws / "pipelines" / "p.yaml"
    cache = BudgetCache()
    assert "BL022" not in _check(pipeline, cache)
    relink(link, outside)  # the structure (the parsed chain) is kept for its places too
    assert "BL022" in _check(pipeline, cache)


def test_a_workspace_relinked_to_a_folder_of_links_to_the_same_files(tmp_path: Path) -> None:
    real = make_workspace(tmp_path / "A", config=CONFIG, pipelines={"p.yaml": PIPELINE},
                          prompts={"sys.txt": "a prompt\n"})
    ws, links = workspace_of_links(tmp_path, real)
    cache = BudgetCache()
    assert "BL007" not in _check(ws / "pipelines" / "p.yaml", cache)
    relink(ws, links)  # the root (config.json's folder) lies in B now; the pipeline in A
    assert "BL007" in _check(ws / "pipelines" / "p.yaml", cache)


def _moved_out_and_linked_back(folder: Path, to: Path) -> None:
    """Move ``folder`` to ``to`` (a rename: the same folder, the same files, their times
    unchanged) and leave a link to it in its place."""
    os.rename(folder, to)
    os.symlink(to, folder)


@BY_FOLDER
def test_a_prompt_folder_moved_outside_and_linked_back_is_checked_again(
        tmp_path: Path, by_folder: bool) -> None:
    """The folder of a prompt moved out of the workspace and linked back: the prompt now
    resolves outside (BL041), though neither it nor its own name is a link; moved back, the
    error goes."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG, pipelines={"p.yaml": PIPELINE},
                        prompts={"sys.txt": "a prompt\n"})
    pipeline = ws / "pipelines" / "p.yaml"
    cache = BudgetCache()
    assert _check(pipeline, cache, by_folder) == []
    _moved_out_and_linked_back(ws / "prompts", tmp_path / "elsewhere")
    assert "BL041" in _check(pipeline, cache, by_folder)
    os.unlink(ws / "prompts")
    os.rename(tmp_path / "elsewhere", ws / "prompts")
    assert _check(pipeline, cache, by_folder) == []


@BY_FOLDER
def test_a_pipeline_folder_moved_outside_and_linked_back_is_checked_again(
        tmp_path: Path, by_folder: bool) -> None:
    """The same for the pipeline's own folder: the pipeline then resolves outside the
    workspace and is not read (BL007)."""
    ws = make_workspace(tmp_path / "ws", config=CONFIG, pipelines={"p.yaml": PIPELINE},
                        prompts={"sys.txt": "a prompt\n"})
    pipeline = ws / "pipelines" / "p.yaml"
    cache = BudgetCache()
    assert _check(pipeline, cache, by_folder) == []
    _moved_out_and_linked_back(ws / "pipelines", tmp_path / "elsewhere")
    assert "BL007" in _check(pipeline, cache, by_folder)
