"""Reports are recomputed only when an input changes: pipeline, chain, prompts, config."""

from __future__ import annotations

import os
from pathlib import Path

from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.check import check_pipeline
from budgetlens.contract.results import CheckOptions
from budgetlens.files import DiskFiles, OverlayFiles
from tests.core.contract.helpers import ONE_STEP as BASE
from tests.core.contract.helpers import chain_workspace, tokens

OPTS = CheckOptions(environ={})


def _ws(tmp_path: Path) -> Path:
    return chain_workspace(tmp_path) / "pipelines" / "child.yaml"


def _touch(path: Path, text: str) -> None:
    path.write_text(text, "utf-8")
    st = path.stat()  # make sure the mtime moves even on coarse clocks
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))


def test_unchanged_inputs_return_the_cached_report(tmp_path: Path) -> None:
    child = _ws(tmp_path)
    cache = BudgetCache()
    first = check_pipeline(child, files=DiskFiles(), options=OPTS, cache=cache)
    second = check_pipeline(child, files=DiskFiles(), options=OPTS, cache=cache)
    assert second is first
    assert cache.hits == 1


def test_a_changed_parent_invalidates_the_child(tmp_path: Path) -> None:
    child = _ws(tmp_path)
    cache = BudgetCache()
    first = check_pipeline(child, files=DiskFiles(), options=OPTS, cache=cache)
    _touch(child.parent / "base.yaml", BASE.replace("1000", "1500"))
    second = check_pipeline(child, files=DiskFiles(), options=OPTS, cache=cache)
    assert second is not first
    assert second.steps[0].context.value == 1500


def test_a_changed_prompt_invalidates(tmp_path: Path) -> None:
    child = _ws(tmp_path)
    cache = BudgetCache()
    check_pipeline(child, files=DiskFiles(), options=OPTS, cache=cache)
    _touch(tmp_path / "prompts" / "sys.txt", "hello world")
    report = check_pipeline(child, files=DiskFiles(), options=OPTS, cache=cache)
    assert report.steps[0].system_prompt.value == 2


def test_a_new_nearer_config_invalidates(tmp_path: Path) -> None:
    child = _ws(tmp_path)
    cache = BudgetCache()
    check_pipeline(child, files=DiskFiles(), options=OPTS, cache=cache)
    (child.parent / "config.json").write_text('{"model_context_window": 2048}')
    report = check_pipeline(child, files=DiskFiles(), options=OPTS, cache=cache)
    assert report.window is not None and report.window.value == 2048


def test_editor_buffers_are_inputs_fingerprinted_by_content(tmp_path: Path) -> None:
    child = _ws(tmp_path)
    cache = BudgetCache()
    disk = DiskFiles()
    prompt = tmp_path / "prompts" / "sys.txt"
    a = check_pipeline(child, files=OverlayFiles(disk, {prompt: "a b"}), options=OPTS,
                       cache=cache)
    b = check_pipeline(child, files=OverlayFiles(disk, {prompt: "a b"}), options=OPTS,
                       cache=cache)
    c = check_pipeline(child, files=OverlayFiles(disk, {prompt: "a b c d e"}), options=OPTS,
                       cache=cache)
    assert b is a
    assert c is not a
    assert (a.steps[0].system_prompt.value, c.steps[0].system_prompt.value) == (
        tokens("a b"), tokens("a b c d e"))


def test_the_policy_environment_is_part_of_the_key(tmp_path: Path) -> None:
    child = _ws(tmp_path)
    cache = BudgetCache()
    a = check_pipeline(child, files=DiskFiles(), cache=cache,
                       options=CheckOptions(environ={"PIPELINE_LIMITS_POLICY": "fail_fast"}))
    b = check_pipeline(child, files=DiskFiles(), cache=cache,
                       options=CheckOptions(environ={"PIPELINE_LIMITS_POLICY": "auto_clamp"}))
    assert (a.policy.value, b.policy.value) == ("fail_fast", "auto_clamp")


def test_a_shared_parent_is_parsed_once_per_cache(tmp_path: Path) -> None:
    child = _ws(tmp_path)
    (child.parent / "other.yaml").write_text("extends: base.yaml\n", "utf-8")
    cache = BudgetCache()
    check_pipeline(child, files=DiskFiles(), options=OPTS, cache=cache)
    counter = next(iter(cache._counters.values()))
    misses = counter.misses
    check_pipeline(child.parent / "other.yaml", files=DiskFiles(), options=OPTS, cache=cache)
    assert counter.misses == misses  # the prompt was not counted again
