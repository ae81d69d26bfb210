"""Suppression comments in prompt files (issue 35): a GitHub Models file is YAML, read whole;
a Prompty or Dotprompt file is read in its front matter only, since its body is the prompt
(a ``#`` line there is prompt text, sent and counted).

Each file below sets no output limit, so ``check`` finds BL070 (warning) on its model line.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from budgetlens_cli.main import main

PROMPTY = """\
---
name: b
model:
  api: chat
  configuration:
    type: openai
    model: gpt-4o-mini{comment}
---
system:
You are terse.{body}

user:
{{{{q}}}}
"""
DOTPROMPT = """\
---
model: openai/gpt-4o-mini{comment}
input:
  schema:
    q: string
---
{{{{role "system"}}}}
You are terse.{body}
{{{{role "user"}}}}
{{{{q}}}}
"""
GITHUB = """\
name: a
model: openai/gpt-4o-mini{comment}
messages:
  - role: system
    content: You are terse.
  - role: user
    content: "{{{{q}}}}"
"""
FILES = [("b.prompty", PROMPTY), ("c.prompt", DOTPROMPT), ("a.prompt.yml", GITHUB)]


def _check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
           name: str, text: str) -> list[str]:
    monkeypatch.chdir(tmp_path)
    for var in ("NO_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(var, raising=False)
    Path(name).write_text(text, "utf-8")
    main(["check", name, "--no-cache", "--quiet"])
    return [line for line in capsys.readouterr().out.splitlines() if line.startswith(name)]


@pytest.mark.parametrize(("name", "template"), FILES)
def test_a_front_matter_comment_suppresses_the_code_on_its_line(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        name: str, template: str) -> None:
    plain = _check(tmp_path, monkeypatch, capsys, name, template.format(comment="", body=""))
    assert any("warning[BL070]" in line for line in plain), plain
    quiet = _check(tmp_path, monkeypatch, capsys, name, template.format(
        comment="  # budgetlens: ignore[BL070]", body=""))
    assert not any("BL070" in line or "BL080" in line for line in quiet), quiet


@pytest.mark.parametrize(("name", "template"), FILES)
def test_a_front_matter_comment_that_hides_nothing_is_bl080(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        name: str, template: str) -> None:
    found = _check(tmp_path, monkeypatch, capsys, name, template.format(
        comment="  # budgetlens: ignore[BL050]", body=""))
    assert any("warning[BL080]" in line for line in found), found
    assert any("warning[BL070]" in line for line in found), found


@pytest.mark.parametrize(("name", "template"), FILES[:2])
def test_a_comment_in_the_body_is_prompt_text_not_a_suppression(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        name: str, template: str) -> None:
    found = _check(tmp_path, monkeypatch, capsys, name, template.format(
        comment="", body="\n# budgetlens: ignore"))
    assert any("warning[BL070]" in line for line in found), found
    assert not any("BL080" in line for line in found), found
