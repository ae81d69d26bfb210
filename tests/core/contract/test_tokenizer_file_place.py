"""A tokenizer.json named by the workspace's config.json is read only inside the workspace,
as a prompt file is (BL014 otherwise, counting with cl100k_base); one named by an option is
the user's own choice. The file is an input of the report as named and as resolved (a link's
target changing is a change of the report's inputs)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from budgetlens.contract.check import check_pipeline
from budgetlens.contract.results import CheckOptions
from tests.tokenizer_files import save_tokenizer

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _save(path: Path) -> None:
    """One token per character ("alpha beta gamma": 16; 3 in cl100k_base)."""
    save_tokenizer(path, per_character=True)


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    shutil.copytree(EXAMPLES, root)
    (root / "prompts/chat.txt").write_text("alpha beta gamma", "utf-8")
    (tmp_path / "secret").mkdir()
    _save(tmp_path / "secret/tokenizer.json")
    return root


def _name_in_config(ws: Path, spec: str) -> None:
    config = json.loads((ws / "config.json").read_text("utf-8"))
    config["tokenizer"] = spec
    (ws / "config.json").write_text(json.dumps(config), "utf-8")


def _check(ws: Path, options: CheckOptions | None = None) -> tuple[list[str], int, str | None]:
    report = check_pipeline(ws / "pipelines/chat.yaml", options=options or CheckOptions())
    return ([f"{d.code} {d.message}" for d in report.diagnostics],
            report.steps[0].system_prompt.value, report.tokenizer)


@pytest.mark.parametrize("how", ["relative", "absolute", "link"])
def test_a_config_naming_a_tokenizer_outside_the_workspace_is_an_error(
        ws: Path, how: str) -> None:
    outside = ws.parent / "secret/tokenizer.json"
    if how == "link":
        os.symlink(outside, ws / "tokenizer.json")
    spec = {"relative": "../secret/tokenizer.json", "absolute": str(outside),
            "link": "tokenizer.json"}[how]
    _name_in_config(ws, spec)
    messages, prompt, tokenizer = _check(ws)
    named = os.path.abspath(ws / spec)
    assert messages == [f"BL014 tokenizer file {named} resolves outside the workspace root"
                        f" {ws}; counting with cl100k_base instead"]
    assert (prompt, tokenizer) == (3, "cl100k_base")  # the outside file was not read


def test_an_option_naming_a_tokenizer_outside_is_the_users_choice(ws: Path) -> None:
    outside = ws.parent / "secret/tokenizer.json"
    messages, prompt, tokenizer = _check(ws, CheckOptions(tokenizer=str(outside)))
    assert messages == []
    assert (prompt, tokenizer) == (16, str(outside))


def test_a_linked_tokenizer_inside_is_an_input_as_named_and_as_resolved(ws: Path) -> None:
    (ws / "tokenizers").mkdir()
    _save(ws / "tokenizers/words.json")
    os.symlink(ws / "tokenizers/words.json", ws / "tokenizer.json")
    _name_in_config(ws, "tokenizer.json")
    report = check_pipeline(ws / "pipelines/chat.yaml")
    assert report.diagnostics == []
    assert {str(ws / "tokenizer.json"), str(ws / "tokenizers/words.json")} <= report.inputs
