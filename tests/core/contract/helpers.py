"""Helpers of the contract tests: small workspaces on disk, and reference token counts.

Token numbers in the tests come from the plain tokenizer (``get_tokenizer(...).count``) on
texts written out by hand; every sum is done in the test itself.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from budgetlens.contract.check import check_pipeline
from budgetlens.contract.results import CheckOptions, PipelineReport
from budgetlens.files import DiskFiles
from budgetlens.tokens.core import get_tokenizer

CL100K = get_tokenizer("cl100k_base")


def tokens(text: str) -> int:
    """The reference count: plain tiktoken cl100k_base, no cache, no budgetlens logic."""
    return len(CL100K.encode(text))


def make_workspace(root: Path, *, config: dict[str, Any] | str | None = None,
                   pipelines: dict[str, str] | None = None,
                   prompts: dict[str, str | bytes] | None = None) -> Path:
    """Write config.json, pipelines/<name> and prompts/<name> under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    if config is not None:
        text = config if isinstance(config, str) else json.dumps(config, indent=2)
        (root / "config.json").write_text(text, "utf-8")
    for name, text in (pipelines or {}).items():
        path = root / "pipelines" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text.encode("utf-8"))
    for name, content in (prompts or {}).items():
        path = root / "prompts" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_bytes(content.encode("utf-8"))
    return root


#: One step reading prompts/sys.txt, context 1000, output 100 (base.yaml of a chain).
ONE_STEP = """\
settings:
  max_context_tokens: 1000
steps:
  - id: s
    type: call_model
    prompt_key: sys
    max_output_tokens: 100
"""


def chain_workspace(root: Path) -> Path:
    """A two-file chain under ``root``: pipelines/child.yaml extends base.yaml
    (:data:`ONE_STEP`), window 4096, prompts/sys.txt "one two three"."""
    return make_workspace(root, config={"model_context_window": 4096},
                          pipelines={"base.yaml": ONE_STEP,
                                     "child.yaml": "extends: base.yaml\n"},
                          prompts={"sys.txt": "one two three"})


def check(path: Path, **options: Any) -> PipelineReport:
    environ = options.pop("environ", {})
    return check_pipeline(path, files=DiskFiles(),
                          options=CheckOptions(environ=environ, **options))


def codes_of(report: PipelineReport) -> list[str]:
    return [d.code for d in report.diagnostics]


def only(report: PipelineReport, code: str) -> Any:
    found = [d for d in report.diagnostics if d.code == code]
    assert len(found) == 1, [(d.code, d.message) for d in report.diagnostics]
    return found[0]


def text_at(path: Path, rng: Any) -> str:
    """The text a single-line range covers."""
    line = path.read_text("utf-8").split("\n")[rng.start.line]
    assert rng.start.line == rng.end.line
    return line[rng.start.character:rng.end.character]
