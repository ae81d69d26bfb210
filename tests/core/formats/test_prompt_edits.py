"""The verified-edit property test, extended to the output-limit edits of prompt files.

For generated GitHub Models, Prompty and Dotprompt files (a limit too large, one that fits,
none with its parent mapping written in 2- or 4-space indentation, none without a parent,
comments, a key after the parent), every clamp edit offered for a prompt file:

- changes nothing outside the file's YAML (the front matter's body stays byte for byte);
- leaves YAML whose data, read by PyYAML's own ``safe_load``, is the original's with exactly
  the planned key set to the planned value;
- is read back by the check from the format's key, and a second plan is empty.

A refused edit (a note) leaves the file unchanged.
"""

from __future__ import annotations

import copy
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from budgetlens.contract.check import check_pipeline
from budgetlens.contract.enums import OutputSource
from budgetlens.contract.plan import apply_plan
from budgetlens.contract.prompt_edit import prompt_clamp_plan
from budgetlens.contract.results import CheckOptions
from budgetlens.files import DiskFiles

OPTIONS = CheckOptions(environ={})
#: format -> (file name, the key path of its output limit, front matter or not)
#: (GitHub Models inserts its preferred key, maxCompletionTokens, where none is written)
FORMATS = {
    "github": ("a.prompt.yml", ("modelParameters", "max_tokens"), False),
    "prompty-v1": ("a.prompty", ("model", "parameters", "max_tokens"), True),
    "prompty-v2": ("a.prompty", ("model", "options", "maxOutputTokens"), True),
    "dotprompt": ("a.prompt", ("config", "maxOutputTokens"), True),
}


@dataclass
class Gen:
    fmt: str
    model: str
    limit: str  # "over" | "fits" | "parent" | "none"
    indent: int
    comment: bool
    after_key: bool
    words: int


def _model_lines(fmt: str, model: str) -> list[str]:
    if fmt == "github":
        return [f"model: openai/{model}"]
    if fmt == "prompty-v1":
        return ["model:", "  api: chat", "  configuration:", "    type: openai",
                f"    model: {model}"]
    if fmt == "prompty-v2":
        return ["model:", f"  id: {model}", "  provider: openai"]
    return [f"model: openai/{model}"]


def _limit_lines(g: Gen, keys: tuple[str, ...]) -> list[str]:
    """The limit's lines (or its parent's alone), nested under the top-level model block
    for Prompty (whose first key is ``model``, written by ``_model_lines``)."""
    value = {"over": 9000, "fits": 100}.get(g.limit)
    pad = " " * g.indent
    under_model = keys[0] == "model"
    base = "  " if under_model else ""
    lines = [] if under_model else [f"{keys[0]}:"]
    depth = 0 if under_model else 1
    for p in keys[1:-1]:
        lines.append(f"{base}{pad * depth}{p}:")
        depth += 1
    if g.limit == "parent":  # the parent holds another key, not the limit
        lines.append(f"{base}{pad * depth}temperature: 0.2")
    elif value is not None:
        lines.append(f"{base}{pad * depth}{keys[-1]}: {value}")
    return lines


def make_text(g: Gen) -> str:
    _, keys, front = FORMATS[g.fmt]
    yaml_lines = ["name: generated"] + (["# a comment the edit keeps"] if g.comment else [])
    yaml_lines += _model_lines(g.fmt, g.model)
    if g.limit != "none":
        yaml_lines += _limit_lines(g, keys)
    if g.after_key:
        yaml_lines.append("description: a key after the limit's block")
    words = " ".join(["token budget"] * g.words)
    if not front:
        return "\n".join([*yaml_lines, "messages:", "  - role: system",
                          f"    content: {words}", "  - role: user",
                          "    content: '{{input}}'"]) + "\n"
    if g.fmt == "dotprompt":
        body = f'{{{{role "system"}}}}\n{words}\n{{{{role "user"}}}}\n{{{{input}}}}\n'
    else:
        body = f"system:\n{words}\n\nuser:\n{{{{input}}}}\n"
    return "---\n" + "\n".join(yaml_lines) + "\n---\n" + body


@st.composite
def gens(draw: Any) -> Gen:
    return Gen(fmt=draw(st.sampled_from(sorted(FORMATS))),
               model=draw(st.sampled_from(["gpt-4", "gpt-4o-mini"])),
               limit=draw(st.sampled_from(["over", "fits", "parent", "none"])),
               indent=draw(st.sampled_from([2, 4])), comment=draw(st.booleans()),
               after_key=draw(st.booleans()), words=draw(st.integers(1, 40)))


def _split(text: str, front: bool) -> tuple[str, str]:
    """(YAML, body) of a file, cut here without budgetlens."""
    if not front:
        return text, ""
    _, yaml_part, body = text.split("---\n", 2)
    return yaml_part, body


def _with(data: Any, keys: tuple[str, ...], value: int) -> Any:
    out = copy.deepcopy(data)
    node = out
    for k in keys[:-1]:
        node = node.setdefault(k, {})
    node[keys[-1]] = value
    return out


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(gens())
def test_every_offered_prompt_file_edit_is_verified(g: Gen) -> None:
    name, keys, front = FORMATS[g.fmt]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, name)
        text = make_text(g)
        Path(path).write_text(text, "utf-8")
        report = check_pipeline(path, files=DiskFiles(), options=OPTIONS)
        plan = prompt_clamp_plan(report, files=DiskFiles())
        if not plan.changes:  # a written limit that fits, or a refusal with its note
            assert plan.notes or (g.limit in ("fits", "over") and report.steps[0].fits), \
                (text, plan)
            assert not plan.notes, plan.notes  # no generated shape is refused
            return
        [change] = plan.changes
        new = apply_plan(plan, DiskFiles())[path]
        old_yaml, old_body = _split(text, front)
        new_yaml, new_body = _split(new, front)
        assert new_body == old_body
        inserted = ("modelParameters", "maxCompletionTokens") if g.fmt == "github" else keys
        assert change.path == (keys if g.limit in ("over", "fits") else inserted)
        assert yaml.safe_load(new_yaml) == _with(yaml.safe_load(old_yaml), change.path,
                                                 change.after)
        Path(path).write_text(new, "utf-8")
        again = check_pipeline(path, files=DiskFiles(), options=OPTIONS)
        [step] = again.steps
        assert step.output.value == change.after
        assert step.output_source is OutputSource.MAX_OUTPUT_TOKENS
        assert step.fits
        assert prompt_clamp_plan(again, files=DiskFiles()).empty
