"""What a re-check costs: counted, never timed.

After a prompt edit, re-checking the pipelines that use it counts that prompt once and parses
no YAML (no pipeline, parent or config.json) and no template of theirs; the cache keeps one
parsed version per file however often it is edited; every path is fingerprinted (``stat``)
and resolved (``realpath``) at most once per check; and a report built from cached parts is
the same as one built from nothing.
"""

from __future__ import annotations

import os
import tracemalloc
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from budgetlens import codes
from budgetlens.contract import cache as cache_module
from budgetlens.contract import config as config_module
from budgetlens.contract import pipeline as pipeline_module
from budgetlens.contract import planner as planner_module
from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.check import check_pipeline
from budgetlens.contract.results import CheckOptions, PipelineReport
from budgetlens.files import DiskFiles, OverlayFiles, RunFiles
from budgetlens.yamldoc import parse as yamldoc_parse
from tests.core.contract.helpers import CL100K, make_workspace, tokens

DEPENDENTS = 20
OTHERS = 5
SHARED = "You are a careful assistant. Answer briefly."
EDITED = "You are a careful assistant. Answer briefly, in French, and cite every source."


class CountingTokenizer:
    """cl100k_base, remembering every text it was asked to count or encode."""

    name = "counting-cl100k"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def encode(self, text: str) -> list[int]:
        self.texts.append(text)
        return list(CL100K.encode(text))

    def count(self, text: str) -> int:
        self.texts.append(text)
        return len(CL100K.encode(text))


def _step(index: int, prompt: str) -> str:
    return (f"  - id: s{index}\n"
            "    type: call_model\n"
            f"    prompt_key: {prompt}\n"
            "    user_parts:\n"
            f"      template: \"Step {index}: {{question}}\"\n"
            f"    max_output_tokens: {100 + index}\n")


def _workspace(root: Path) -> tuple[Path, list[Path], list[Path]]:
    """config.json, a base pipeline, DEPENDENTS pipelines using prompts/shared.txt (and
    their own prompt) and OTHERS that do not use it."""
    pipelines = {"base.yaml": "settings:\n  max_context_tokens: 500\n"}
    prompts = {"shared.txt": SHARED}
    for i in range(DEPENDENTS + OTHERS):
        prompts[f"own{i}.txt"] = f"Own prompt number {i}."
        first = "shared" if i < DEPENDENTS else f"own{i}"
        pipelines[f"p{i:02d}.yaml"] = ("extends: base.yaml\nsteps:\n"
                                       + _step(0, first) + _step(1, f"own{i}"))
    make_workspace(root, config={"model_context_window": 4096, "development": True},
                   pipelines=pipelines, prompts=prompts)
    paths = [root / "pipelines" / f"p{i:02d}.yaml" for i in range(DEPENDENTS + OTHERS)]
    return root / "prompts" / "shared.txt", paths[:DEPENDENTS], paths[DEPENDENTS:]


def _counting(monkeypatch: pytest.MonkeyPatch, module: Any, name: str,
              calls: Counter[str], label: str) -> None:
    original = getattr(module, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        calls[label] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, wrapper)


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count every call of the YAML parser (where the pipeline and config readers call it)
    and of the template parser (where the cache calls it)."""
    calls: Counter[str] = Counter()
    for module in (yamldoc_parse, pipeline_module, config_module):
        _counting(monkeypatch, module, "parse_yaml", calls, "yaml")
    _counting(monkeypatch, cache_module, "parse_template", calls, "template")
    return calls


def _count_structure(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Count how often a check reads a pipeline's structure: config.json's discovery, the
    extends chain, the merged settings."""
    calls: Counter[str] = Counter()
    for name in ("pipeline_config", "load_chain", "merged_settings"):
        _counting(monkeypatch, planner_module, name, calls, name)
    return calls


def _check(path: Path, root: Path, cache: BudgetCache, overlay: dict[Path, str],
           tokenizer: CountingTokenizer | None = None) -> PipelineReport:
    files = OverlayFiles(DiskFiles(root), overlay)
    options = CheckOptions(environ={}, workspace_root=root, tokenizer=tokenizer)
    return check_pipeline(path, files=files, options=options, cache=cache)


def test_a_prompt_edit_counts_only_that_prompt_and_parses_no_yaml_of_its_dependents(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared, dependents, others = _workspace(tmp_path)
    tokenizer = CountingTokenizer()
    cache = BudgetCache()
    for path in dependents + others:
        _check(path, tmp_path, cache, {}, tokenizer)
    calls = _count_parses(monkeypatch)
    structure = _count_structure(monkeypatch)
    tokenizer.texts.clear()

    reports = [_check(p, tmp_path, cache, {shared: EDITED}, tokenizer) for p in dependents]

    assert tokenizer.texts == [EDITED]  # the edited prompt, once, for all 20 pipelines
    assert calls["yaml"] == 0  # no pipeline, parent or config.json parsed again
    assert calls["template"] == 0
    assert sum(structure.values()) == 0  # no config lookup, chain or settings merge either
    for report in reports:
        first = report.steps[0]
        assert first.prompt_file == str(shared)
        assert first.system_prompt.value == tokens(EDITED)
        # fixed = prompt + template emptied ("Step 0: ") + default format overhead 32
        assert first.fixed.value == tokens(EDITED) + tokens("Step 0: ") + 32


def test_a_report_from_cached_parts_is_the_report_from_nothing(tmp_path: Path) -> None:
    shared, dependents, others = _workspace(tmp_path)
    cache = BudgetCache()
    for path in dependents + others:
        _check(path, tmp_path, cache, {})
    huge = SHARED + " filler" * 4000  # 4,000+ tokens and 500 of context: over the window
    for text in (EDITED, huge):
        for path in dependents[:3] + others[:1]:
            warm = _check(path, tmp_path, cache, {shared: text})
            cold = _check(path, tmp_path, BudgetCache(), {shared: text})
            assert warm.steps == cold.steps
            assert warm.diagnostics == cold.diagnostics
            assert [d.data for d in warm.diagnostics] == [d.data for d in cold.diagnostics]
            assert (warm.clamp, warm.inputs, warm.chain) == (cold.clamp, cold.inputs,
                                                            cold.chain)
    over = _check(dependents[0], tmp_path, cache, {shared: huge})
    assert [d.step for d in over.diagnostics if d.code == codes.CANNOT_FIT] == ["s0"]


def test_the_cache_keeps_one_parsed_version_per_file_across_edits(tmp_path: Path) -> None:
    shared, dependents, _ = _workspace(tmp_path)
    pipeline = dependents[0]
    text = pipeline.read_text("utf-8")
    cache = BudgetCache()
    for n in range(30):
        _check(pipeline, tmp_path, cache, {pipeline: text.replace("100", f"{200 + n}"),
                                           shared: f"{SHARED} revision {n}"})
    # p00.yaml and base.yaml (pipeline), config.json (config), shared.txt and own0.txt
    # (tokens:cl100k_base): one entry each, whatever the number of edits
    assert cache.sizes()["files"] == 5
    assert cache.sizes()["reports"] == 1
    assert cache.sizes()["structures"] == 1


def test_editing_a_pipeline_200_times_keeps_the_heap_flat(tmp_path: Path) -> None:
    _, dependents, _ = _workspace(tmp_path)
    pipeline = dependents[0]
    steps = "".join(_step(i, "shared") for i in range(10))
    text = f"extends: base.yaml\nsteps:\n{steps}"
    cache = BudgetCache()

    def edit(n: int) -> None:
        _check(pipeline, tmp_path, cache, {pipeline: text + f"# edit {n}\n"})

    for n in range(20):  # warm up: counters, encodings, interned strings
        edit(n)
    tracemalloc.start()
    try:
        edit(20)
        start, _ = tracemalloc.get_traced_memory()
        for n in range(21, 200):
            edit(n)
        end, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # keeping every parsed version would grow by MBs (one is tens of KB)
    assert end - start < 500_000


def test_templates_are_parsed_once_per_text(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    _, dependents, _ = _workspace(tmp_path)
    pipeline = dependents[0]
    steps = "".join(_step(i % 3, "shared") for i in range(30))  # 3 distinct templates
    text = f"extends: base.yaml\nsteps:\n{steps}"
    calls = _count_parses(monkeypatch)
    cache = BudgetCache()
    _check(pipeline, tmp_path, cache, {pipeline: text})
    assert calls["template"] == 3
    _check(pipeline, tmp_path, cache, {pipeline: text + "# one more line\n"})
    assert calls["template"] == 3
    assert calls["yaml"] == 2 + 1 + 1  # p00 twice, base.yaml and config.json once


def _count_file_facts(monkeypatch: pytest.MonkeyPatch) -> tuple[Counter[str], Counter[str]]:
    """Count ``os.path.realpath`` calls and fingerprints taken (``stat``) per path."""
    real: Counter[str] = Counter()
    stats: Counter[str] = Counter()
    realpath: Callable[[str], str] = os.path.realpath
    fingerprint = DiskFiles.fingerprint

    def counting_realpath(path: Any, *args: Any, **kwargs: Any) -> str:
        real[str(path)] += 1
        return realpath(path, *args, **kwargs)

    def counting_fingerprint(self: DiskFiles, path: Path) -> str:
        stats[str(path)] += 1
        return fingerprint(self, path)

    monkeypatch.setattr(os.path, "realpath", counting_realpath)
    monkeypatch.setattr(DiskFiles, "fingerprint", counting_fingerprint)
    return real, stats


def test_each_path_is_resolved_and_fingerprinted_once_per_check(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared, dependents, _ = _workspace(tmp_path)
    pipeline = dependents[0]
    steps = "".join(_step(i, "shared" if i % 2 else "own0") for i in range(40))
    pipeline.write_text(f"extends: base.yaml\nsteps:\n{steps}", "utf-8")
    cache = BudgetCache()
    options = CheckOptions(environ={}, workspace_root=tmp_path)
    check_pipeline(pipeline, files=DiskFiles(tmp_path), options=options, cache=cache)
    real, stats = _count_file_facts(monkeypatch)

    report = check_pipeline(pipeline, files=OverlayFiles(DiskFiles(tmp_path),
                                                          {shared: EDITED}),
                            options=options, cache=cache)

    assert len(report.steps) == 40
    assert real and max(real.values()) == 1, real
    # the root, and the two prompts (40 steps) each resolved once
    assert set(real) == {str(tmp_path), str(shared), str(tmp_path / "prompts" / "own0.txt")}
    assert stats and max(stats.values()) == 1, stats


def test_a_cold_check_fingerprints_each_path_once(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    _, dependents, _ = _workspace(tmp_path)
    pipeline = dependents[0]
    steps = "".join(_step(i, "shared") for i in range(40))
    pipeline.write_text(f"extends: base.yaml\nsteps:\n{steps}", "utf-8")
    real, stats = _count_file_facts(monkeypatch)
    check_pipeline(pipeline, files=DiskFiles(tmp_path),
                   options=CheckOptions(environ={}, workspace_root=tmp_path))
    assert max(stats.values()) == 1, stats
    # each file read is resolved by the read's own containment check and at most once more
    # by the check's memo; never once per step (the prompt is used by 40 steps)
    assert real[str(tmp_path / "prompts" / "shared.txt")] <= 2


def test_one_run_files_can_serve_a_batch_of_checks(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    shared, dependents, _ = _workspace(tmp_path)
    cache = BudgetCache()
    options = CheckOptions(environ={}, workspace_root=tmp_path)
    for path in dependents:
        check_pipeline(path, files=DiskFiles(tmp_path), options=options, cache=cache)
    real, stats = _count_file_facts(monkeypatch)
    batch = RunFiles(OverlayFiles(DiskFiles(tmp_path), {shared: EDITED}))
    for path in dependents:
        check_pipeline(path, files=batch, options=options, cache=cache)
    assert max(real.values()) == 1, real  # the root and shared.txt: once for 20 pipelines
    assert max(stats.values()) == 1, stats
