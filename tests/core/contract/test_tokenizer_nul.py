"""A tokenizer a config.json names by a path with a NUL byte names no file at all: BL014 at
that value, counted with the default (it was an internal error from ``os.stat``, with
``--no-cache`` too; found by a review, review25b)."""

from __future__ import annotations

import json
from pathlib import Path

from budgetlens.contract.check import CheckOptions, check_pipeline
from budgetlens.files import DiskFiles
from tests.core.contract.helpers import codes_of, make_workspace

STEP = ("settings:\n  max_context_tokens: 1000\n"
        "steps:\n  - {id: s, type: call_model, prompt_key: p, max_output_tokens: 100}\n")


def test_a_tokenizer_path_with_a_nul_byte_is_bl014_not_a_crash(tmp_path: Path) -> None:
    ws = make_workspace(tmp_path / "ws", config={"model_context_window": 4096,
                                                 "model_max_tokens": 512,
                                                 "tokenizer": "tok\u0000.json"},
                        prompts={"p.txt": "Be helpful.\n"}, pipelines={"a.yaml": STEP})
    report = check_pipeline(ws / "pipelines" / "a.yaml", files=DiskFiles(),
                            options=CheckOptions(environ={}))
    assert codes_of(report) == ["BL014"]
    diag = report.diagnostics[0]
    assert "NUL" in diag.message and diag.file.endswith("config.json")
    text = (ws / "config.json").read_text("utf-8")
    line = text.splitlines()[diag.range.start.line]
    assert line[diag.range.start.character:diag.range.end.character] == '"tok\\u0000.json"'
    assert json.loads(text)["tokenizer"] == "tok\u0000.json"
    assert report.tokenizer == "cl100k_base" and report.steps[0].system_prompt.value > 0
