"""The work ``budgetlens check`` does per prompt file, counted (bench/bench_formats.py times
it): nothing a file with nothing to report does not need.

Files are written to disk as a user keeps them and checked through the CLI's ``main``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from budgetlens.models.registry import Registry
from budgetlens_cli.main import main
from tests.workspaces.prompt_files import GITHUB, clean_env

__all__ = ["clean_env"]  # the autouse fixture of tests/workspaces/prompt_files.py


def _suggestions(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every name the registry's "did you mean" search is asked about."""
    asked: list[str] = []
    original = Registry.suggest

    def suggest(self: Registry, name: str) -> str | None:
        asked.append(name)
        return original(self, name)
    monkeypatch.setattr(Registry, "suggest", suggest)
    return asked


def test_a_known_model_is_not_searched_for_a_suggestion(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The search compares the name with every registry name (about 2 ms a file: a third
    of a check of 1,000 prompt files went there); a model the registry knows needs none."""
    asked = _suggestions(monkeypatch)
    for i, model in enumerate(("openai/gpt-4o-mini", "openai/gpt-4", "openai/gpt-4.1")):
        path = Path("repo") / f"f{i}.prompt.yml"
        path.parent.mkdir(exist_ok=True)
        path.write_text(GITHUB.replace("openai/gpt-4o-mini", model), "utf-8")
    code = main(["check", "repo", "-j", "1"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "3 pipelines, 3 call_model steps (0 not fitting): 0 errors" in out
    assert asked == []


def test_an_unknown_model_still_gets_its_suggestion(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    asked = _suggestions(monkeypatch)
    path = Path("repo") / "bugs.prompt.yml"
    path.parent.mkdir()
    path.write_text(GITHUB.replace("openai/gpt-4o-mini", "openai/gpt-4o-minii"), "utf-8")
    main(["check", "repo", "-j", "1"])
    out = capsys.readouterr().out
    assert set(asked) == {"openai/gpt-4o-minii"}
    assert "model 'openai/gpt-4o-minii' is not in the model registry" in out
    # the prompt file's own wording, with the search's answer (no close name: the hint)
    assert ("): the file is checked with config.json's limits, if any; run"
            " `budgetlens models gpt-4o-minii` to find its name") in out


PROMPTY = """\
---
name: Support answer
model:
  api: chat
  configuration:
    type: openai
    model: gpt-4o
  parameters:
    max_tokens: 1500
inputs:
  question:
    type: string
---
system:
You answer questions about {product}, politely and briefly.

user:
{{{{ question }}}}
"""


def test_a_prompty_body_is_parsed_for_its_variables_once(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    """The reader renders the body and asks for its variables; both need the names, which
    were parsed twice (a quarter of reading a Prompty file)."""
    import jinja2

    parsed: list[str] = []
    original = jinja2.Environment.parse

    def parse(self: jinja2.Environment, source: str, *args: object, **kwargs: object) -> object:
        parsed.append(source)
        return original(self, source, *args, **kwargs)  # type: ignore[arg-type]
    monkeypatch.setattr(jinja2.Environment, "parse", parse)
    product = f"product {tmp_path.name}"  # a body no earlier test parsed
    path = Path("repo") / "support.prompty"
    path.parent.mkdir()
    path.write_text(PROMPTY.format(product=product), "utf-8")
    code = main(["check", "repo", "-j", "1"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "1 pipeline, 1 call_model step (0 not fitting): 0 errors" in out
    assert "{{question}}: up to" in out  # the variable was found
    assert len([s for s in parsed if product in s]) == 1


def test_a_file_without_sample_inputs_is_read_once(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The concrete-input cases read the file again to render it with each sample; a file
    with none (most) was read again anyway."""
    from budgetlens.files import DiskFiles

    reads: list[str] = []
    original = DiskFiles.read_stat

    def read_stat(self: DiskFiles, path: Path, *args: object, **kwargs: object) -> object:
        reads.append(str(path))
        return original(self, path, *args, **kwargs)  # type: ignore[arg-type]
    monkeypatch.setattr(DiskFiles, "read_stat", read_stat)
    path = Path("repo") / "bugs.prompt.yml"
    path.parent.mkdir()
    path.write_text(GITHUB, "utf-8")
    code = main(["check", "repo", "-j", "1", "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [s["budget"]["output"] for s in data["steps"]] == [2000]
    assert reads.count(str(path)) == 1


def test_a_file_with_sample_inputs_still_gets_its_cases(
        capsys: pytest.CaptureFixture[str]) -> None:
    path = Path("repo") / "bugs.prompt.yml"
    path.parent.mkdir()
    path.write_text(GITHUB + "testData:\n  - input: a short bug report\n", "utf-8")
    code = main(["check", "repo", "-j", "1"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "the sample input" in out
