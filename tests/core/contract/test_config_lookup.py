"""config.json over a run of many checks (one ``RunFiles`` and one ``BudgetCache``, as the
CLI's): read once per run, and looked up once per pipeline, not once to choose the
pipeline's planner and again to plan it. Counted by a file source that counts what it is
asked about config.json."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.check import check_pipeline
from budgetlens.contract.results import CheckOptions, PipelineReport
from budgetlens.files import DiskFiles, RunFiles
from tests.core.contract.helpers import make_workspace

PIPELINES = 6
STEP = ("steps:\n  - id: one\n    type: call_model\n    prompt_key: p\n"
        "    max_output_tokens: 100\n")
#: A config.json ``prompt_mappings`` entry: the in-house YAML files under agents/.
MAPPING = {"glob": "agents/*.yaml", "model": "model.name", "output": "model.max_tokens"}


class CountingFiles(RunFiles):
    """A run's file source that counts, per path, each fingerprint it is asked for and each
    read."""

    def __init__(self) -> None:
        super().__init__(DiskFiles())
        self.asked: Counter[str] = Counter()
        self.reads: Counter[str] = Counter()

    def fingerprint(self, path: Path | str) -> str:
        self.asked[str(path)] += 1
        return super().fingerprint(path)

    def read_text(self, path: Path) -> str:
        self.reads[str(path)] += 1
        return super().read_text(path)

    def read_text_utf8(self, path: Path) -> tuple[str, bytes | None]:
        self.reads[str(path)] += 1
        return super().read_text_utf8(path)


def _run(paths: list[Path]) -> tuple[CountingFiles, list[PipelineReport]]:
    files, cache = CountingFiles(), BudgetCache()
    options = CheckOptions(environ={})
    return files, [check_pipeline(p, files=files, options=options, cache=cache) for p in paths]


def test_pipelines_read_config_json_once_and_look_it_up_once_each(tmp_path: Path) -> None:
    make_workspace(tmp_path, config={"model_context_window": 4096, "model_max_tokens": 100},
                   pipelines={f"flow{i}.yaml": f"settings:\n  max_context_tokens: {1000 + i}\n"
                              + STEP for i in range(PIPELINES)},
                   prompts={"p.txt": "hello"})
    paths = [tmp_path / "pipelines" / f"flow{i}.yaml" for i in range(PIPELINES)]
    files, reports = _run(paths)
    config = str(tmp_path / "config.json")
    assert files.reads[config] == 1
    assert files.asked[config] == PIPELINES  # one lookup per pipeline
    for i, report in enumerate(reports):  # each result still depends on config.json
        assert report.input_fingerprints[config] == DiskFiles().fingerprint(Path(config))
        assert report.steps[0].context.value == 1000 + i


@pytest.mark.parametrize("count", [1, PIPELINES])
def test_mapped_files_look_config_json_up_once_each(tmp_path: Path, count: int) -> None:
    make_workspace(tmp_path, config={"model_context_window": 4096, "model_max_tokens": 100,
                                     "prompt_mappings": [MAPPING]})
    (tmp_path / "agents").mkdir()
    paths = []
    for i in range(count):
        path = tmp_path / "agents" / f"a{i}.yaml"
        path.write_text(f"model:\n  name: gpt-4o\n  max_tokens: {100 + i}\n", "utf-8")
        paths.append(path)
    files, reports = _run(paths)
    config = str(tmp_path / "config.json")
    assert files.reads[config] == 1
    assert files.asked[config] == count
    for i, report in enumerate(reports):  # read by the mapping: its output limit is the step's
        assert [s.output.value for s in report.steps] == [100 + i]
        assert config in report.input_fingerprints
