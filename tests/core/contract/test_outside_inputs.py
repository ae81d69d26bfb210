"""Inputs a check leaves unread because they resolve outside the workspace are inputs all
the same: relinked into it, no cache keeps the error (a reviewer's reproductions after stop
23; each failed on 2938c74). A parent named by ``extends`` (BL022) and the pipeline itself
(BL007)."""

from __future__ import annotations

import os
from pathlib import Path

from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.check import CheckOptions, check_pipeline
from budgetlens.files import DiskFiles

CONFIG = '{"model_context_window": 8192, "model_max_tokens": 512, "prompts_dir": "prompts"}'
CHILD = ("extends: base.yaml\nsteps:\n  - id: s\n    type: call_model\n"
         "    prompt_key: sys\n    max_output_tokens: 100\n")
BASE = "settings:\n  max_context_tokens: 1000\n"


def _ws(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    ws = tmp_path / "ws"
    (ws / "pipelines").mkdir(parents=True)
    (ws / "prompts").mkdir()
    (ws / "kept").mkdir()
    (ws / "config.json").write_text(CONFIG)
    (ws / "prompts" / "sys.txt").write_text("hello world prompt\n")
    (ws / "pipelines" / "p.yaml").write_text(CHILD)
    outside = tmp_path / "outside-base.yaml"
    inside = ws / "kept" / "base.yaml"
    outside.write_text(BASE)
    inside.write_text(BASE)
    link = ws / "pipelines" / "base.yaml"
    os.symlink(outside, link)
    return ws, link, outside, inside


def _relink(link: Path, target: Path) -> None:
    link.unlink()
    os.symlink(target, link)


def test_extends_parent_relinked_into_the_workspace_core_cache(tmp_path: Path) -> None:
    ws, link, _, inside = _ws(tmp_path)
    p, opts, cache = ws / "pipelines" / "p.yaml", CheckOptions(workspace_root=ws), BudgetCache()
    first = check_pipeline(p, files=DiskFiles(), options=opts, cache=cache)
    assert "BL022" in [d.code for d in first.diagnostics]
    _relink(link, inside)
    fresh = check_pipeline(p, files=DiskFiles(), options=opts)
    assert "BL022" not in [d.code for d in fresh.diagnostics]
    again = check_pipeline(p, files=DiskFiles(), options=opts, cache=cache)
    assert [d.code for d in again.diagnostics] == [d.code for d in fresh.diagnostics]



def test_the_unread_parent_is_an_input_of_the_report(tmp_path: Path) -> None:
    """The language server checks a pipeline again when an input changes: the parent named
    by ``extends`` is one though it was not read."""
    ws, link, _, _ = _ws(tmp_path)
    report = check_pipeline(ws / "pipelines" / "p.yaml", files=DiskFiles(),
                            options=CheckOptions(workspace_root=ws))
    assert "BL022" in [d.code for d in report.diagnostics]
    assert str(link) in report.inputs


def test_a_pipeline_relinked_into_the_workspace_core_cache(tmp_path: Path) -> None:
    ws, _, outside, _ = _ws(tmp_path)
    (outside.parent / "outside-p.yaml").write_text(BASE + CHILD.split("\n", 1)[1])
    (ws / "kept" / "p.yaml").write_text(BASE + CHILD.split("\n", 1)[1])
    link = ws / "pipelines" / "q.yaml"
    os.symlink(outside.parent / "outside-p.yaml", link)
    opts, cache = CheckOptions(workspace_root=ws), BudgetCache()
    assert "BL007" in [d.code for d in check_pipeline(link, files=DiskFiles(), options=opts,
                                                       cache=cache).diagnostics]
    _relink(link, ws / "kept" / "p.yaml")
    fresh = check_pipeline(link, files=DiskFiles(), options=opts)
    assert "BL007" not in [d.code for d in fresh.diagnostics]
    again = check_pipeline(link, files=DiskFiles(), options=opts, cache=cache)
    assert [d.code for d in again.diagnostics] == [d.code for d in fresh.diagnostics]
