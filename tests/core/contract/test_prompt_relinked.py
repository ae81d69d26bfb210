"""A prompt file that resolves outside the workspace is not read (BL041), but it is still an
input of the report: relinked into the workspace, a check with the same cache counts it
(found after stop 23: the cached report kept the stale BL041)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.check import CheckOptions, check_pipeline
from budgetlens.files import DiskFiles, OverlayFiles
from tests.core.contract.helpers import ONE_STEP as PIPELINE
from tests.core.contract.helpers import codes_of, make_workspace
from tests.outside_links import relink

CONFIG = {"model_context_window": 8192, "model_max_tokens": 512, "prompts_dir": "prompts"}
TEXT = "the same words on both sides of the workspace's edge\n"


def _workspace(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    ws = tmp_path / "ws"
    make_workspace(ws, config=CONFIG, pipelines={"p.yaml": PIPELINE}, prompts={})
    (ws / "prompts").mkdir()
    outside, inside = tmp_path / "outside.txt", ws / "kept" / "sys.txt"
    inside.parent.mkdir()
    outside.write_text(TEXT, "utf-8")
    inside.write_text(TEXT, "utf-8")  # the same bytes: only where the link points changes
    return ws / "pipelines" / "p.yaml", ws / "prompts" / "sys.txt", outside, inside


def test_a_prompt_relinked_from_outside_to_inside_is_counted_with_the_same_cache(
        tmp_path: Path) -> None:
    pipeline, link, outside, inside = _workspace(tmp_path)
    os.symlink(outside, link)
    cache = BudgetCache()
    first = check_pipeline(pipeline, files=DiskFiles(), options=CheckOptions(), cache=cache)
    assert "BL041" in codes_of(first)
    assert first.steps[0].system_prompt.value == 0
    relink(link, inside)
    after = check_pipeline(pipeline, files=DiskFiles(), options=CheckOptions(), cache=cache)
    assert "BL041" not in codes_of(after)
    assert after.steps[0].system_prompt.value > 0
    fresh = check_pipeline(pipeline, files=DiskFiles(), options=CheckOptions())
    assert after.steps[0].system_prompt.value == fresh.steps[0].system_prompt.value
    relink(link, outside)  # and back out: the error again, not the count
    again = check_pipeline(pipeline, files=DiskFiles(), options=CheckOptions(), cache=cache)
    assert "BL041" in codes_of(again)


def test_an_editor_check_sees_the_relink_too(tmp_path: Path) -> None:
    """The language server's files: the pipeline open in a buffer, the prompt on disk."""
    pipeline, link, outside, inside = _workspace(tmp_path)
    os.symlink(outside, link)
    cache = BudgetCache()

    def files() -> OverlayFiles:
        return OverlayFiles(DiskFiles(), {pipeline: PIPELINE})

    assert "BL041" in codes_of(check_pipeline(pipeline, files=files(), cache=cache))
    relink(link, inside)
    assert "BL041" not in codes_of(check_pipeline(pipeline, files=files(), cache=cache))


def test_the_outside_prompt_is_never_opened(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """An input recorded as unread (``OUTSIDE_FINGERPRINT``): the check never opens it (a
    guard: the check did not open it before the fix either)."""
    import builtins

    pipeline, link, outside, _ = _workspace(tmp_path)
    os.symlink(outside, link)
    opened: list[str] = []
    real_open = builtins.open

    def spying(file: object, *args: object, **kwargs: object) -> object:
        opened.append(os.path.realpath(str(file)) if isinstance(file, (str, Path)) else "")
        return real_open(file, *args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(builtins, "open", spying)
    report = check_pipeline(pipeline, files=DiskFiles(), cache=BudgetCache())
    assert "BL041" in codes_of(report)
    assert str(outside.resolve()) not in opened


def test_a_report_with_an_outside_prompt_is_not_taken_from_the_cache(tmp_path: Path) -> None:
    """Its verdict rests on where a link points, which no fingerprint of a read file
    covers; the report is made again each time (cheap: it is an error to fix anyway)."""
    pipeline, link, outside, _ = _workspace(tmp_path)
    os.symlink(outside, link)
    cache = BudgetCache()
    for _ in range(3):
        assert "BL041" in codes_of(check_pipeline(pipeline, files=DiskFiles(), cache=cache))
    assert cache.hits == 0
    link.unlink()
    os.symlink(pipeline.parent.parent / "kept" / "sys.txt", link)
    for _ in range(2):
        assert "BL041" not in codes_of(check_pipeline(pipeline, files=DiskFiles(), cache=cache))
    assert cache.hits == 1  # inside, the report is cached again
