"""Every file of the corpus is read without an exception, each is recorded in its folder's
SOURCES.md, and every range a reader gives covers what it says it covers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from budgetlens.formats import dotprompt, github_models, prompty
from budgetlens.formats.model import PromptFile
from tests.core.formats.helpers import CORPUS, corpus, sliced

FILES = [(fmt, p) for fmt in ("github_models", "prompty", "dotprompt") for p in corpus(fmt)]


def read(fmt: str, path: Path) -> PromptFile:
    text = path.read_text("utf-8")
    if fmt == "github_models":
        return github_models.read(text, str(path))
    if fmt == "prompty":
        return prompty.read(text, str(path), root=CORPUS)
    return dotprompt.read(text, str(path), root=CORPUS)


@pytest.mark.parametrize("fmt", ["github_models", "prompty", "dotprompt"])
def test_each_format_has_ten_files_with_their_sources(fmt: str) -> None:
    files = corpus(fmt)
    assert len(files) >= 10
    sources = (CORPUS / fmt / "SOURCES.md").read_text("utf-8")
    rows = re.findall(r"^\| (\S+) \| (\S+/\S+) \| (\S+) \| ([0-9a-f]{40}) \| (\S+) \|$",
                      sources, re.MULTILINE)
    recorded = {row[0] for row in rows}
    for path in files:
        assert str(path.relative_to(CORPUS / fmt)) in recorded
    assert {row[4] for row in rows} <= {"MIT", "Apache-2.0", "BSD-3-Clause"}


@pytest.mark.parametrize(("fmt", "path"), FILES, ids=[str(p.relative_to(CORPUS))
                                                      for _, p in FILES])
def test_every_corpus_file_is_read(fmt: str, path: Path) -> None:
    result = read(fmt, path)
    text = path.read_text("utf-8")
    assert len(result.steps) == 1
    step = result.steps[0]
    if fmt != "dotprompt" or not path.name.startswith("_"):
        assert step.messages or any(p.kind.value == "template" for p in result.problems)
    if step.model is not None and step.model.range is not None \
            and "${" not in sliced(text, step.model.range):
        assert step.model.value in sliced(text, step.model.range)
    if step.output.value is not None:
        assert sliced(text, step.output.range) == str(step.output.value)
        assert sliced(text, step.output.key_range) == step.output.key.rsplit(".", 1)[-1]
    for message in step.messages:
        assert sliced(text, message.range) != "" or message.text == ""
        for name in message.variables:
            assert name in sliced(text, message.range)
