"""The readers' messages compared with what each format's own runtime renders for the
corpus's sample inputs: prompty 2.x (``prompty.load`` + ``prepare``) and dotpromptz
(``Dotprompt.render``), both from PyPI, offline.

Known differences, each pinned below: prompty 2.x refuses v1 files that write
``template: jinja2`` (a string), so those are compared after the change its error asks
for; it refuses a v1 ``inputs`` mapping of plain values outright; ``{% extends %}`` of
another file is rendered by neither (prompty 2 has no loader for it; the reader reports a
template problem). dotpromptz needs the app's own
helpers (``list``) and named schemas (``Recipe``); the test gives it the empty ones the
reader assumes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from budgetlens.formats import dotprompt, prompty
from tests.core.formats.helpers import CORPUS, corpus

prompty_runtime = pytest.importorskip("prompty")
dotpromptz = pytest.importorskip("dotpromptz")

ENV = {"AZURE_OPENAI_ENDPOINT": "https://example.invalid", "AZURE_OPENAI_API_KEY": "k",
       "TEST_ENDPOINT": "https://example.invalid", "TEST_API_KEY": "k"}
#: v1 files prompty 2.x refuses as written (``template: jinja2``); compared after the
#: change its error asks for (``template: {format: jinja2, parser: prompty}``).
V1_TEMPLATE_STRING = {"evaluation.prompty"}
#: A v1 file prompty 2.1 cannot load even then: its ``inputs`` mapping gives plain values
#: (``lastName: Doe``), which 2.1 loads as properties without a ``kind`` and refuses.
REFUSED = {"legacy_basic.prompty": "discriminator field 'kind'"}
#: ``{% extends "evaluation.prompty" %}``: neither renders it.
NOT_RENDERED = {"faithfulness.prompty"}


def _prompty_messages(path: Path, inputs: dict[str, Any]) -> list[tuple[str, str]]:
    from prompty.core.pipeline import prepare

    agent = prompty_runtime.load(str(path))
    return [(m.role, "".join(getattr(part, "value", "") for part in m.parts))
            for m in prepare(agent, dict(inputs))]


@pytest.mark.parametrize("path", corpus("prompty"), ids=lambda p: p.name)
def test_prompty_runtime_renders_the_same_messages(path: Path, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)
    text = path.read_text("utf-8")
    first = prompty.read(text, str(path), root=CORPUS).steps[0]
    inputs = {k: v for k, v in (first.samples[0] if first.samples else {}).items()
              if k != first.history}
    ours = [(m.role, m.text)
            for m in prompty.read(text, str(path), inputs=inputs, root=CORPUS)
            .steps[0].messages]
    if path.name in NOT_RENDERED:
        assert ours == []
        with pytest.raises(Exception, match="Invalid template format"):
            _prompty_messages(path, inputs)
        return
    if path.name in REFUSED:
        migrated = tmp_path / path.name
        migrated.write_text(text.replace(
            "template: jinja2", "template:\n  format: jinja2\n  parser: prompty"), "utf-8")
        with pytest.raises(Exception, match=REFUSED[path.name]):
            _prompty_messages(migrated, inputs)
        assert ours == [("system", "You are an AI assistant."),
                        ("user", "What is the meaning of life?")]
        return
    if path.name in V1_TEMPLATE_STRING:
        with pytest.raises(Exception, match="Invalid template format"):
            _prompty_messages(path, inputs)
        migrated = tmp_path / path.name
        migrated.write_text(text.replace(
            "template: jinja2", "template:\n  format: jinja2\n  parser: prompty"), "utf-8")
        path = migrated
    assert _prompty_messages(path, inputs) == ours
    assert ours  # the comparison compared something


def _dotprompt_messages(path: Path, inputs: dict[str, Any]) -> list[tuple[str, str]]:
    from dotpromptz import Dotprompt
    from dotpromptz.typing import DataArgument

    partials = {p.stem[1:]: p.read_text("utf-8") for p in path.parent.glob("_*.prompt")}
    runtime = Dotprompt(partials=partials, helpers={"list": lambda args, options: ""},
                        schemas={"Recipe": {"type": "object"}})
    rendered = asyncio.run(runtime.render(path.read_text("utf-8"),
                                          DataArgument(input=inputs)))
    return [(str(getattr(m.role, "value", m.role)),
             "".join(getattr(part, "text", None) or "" for part in m.content))
            for m in rendered.messages]


@pytest.mark.parametrize("path", [p for p in corpus("dotprompt")
                                  if not p.name.startswith("_")], ids=lambda p: p.name)
def test_dotpromptz_runtime_renders_the_same_messages(path: Path) -> None:
    text = path.read_text("utf-8")
    blank = dotprompt.read(text, str(path), root=CORPUS).steps[0]
    inputs = {name: f"<{name}>" for m in blank.messages for name in m.variables}
    ours = [(m.role, m.text)
            for m in dotprompt.read(text, str(path), inputs=inputs, root=CORPUS)
            .steps[0].messages]
    assert _dotprompt_messages(path, inputs) == ours
    assert ours
