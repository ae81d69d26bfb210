"""Prompty files (``*.prompty``), v1 and v2.

YAML front matter, then a body of role lines (``system:``, ``user:``, ``assistant:``,
``developer:``, alone on a line, optionally with ``[attrs]``) in Jinja2 (the default) or
mustache. v1 (prompty 0.1/1.x): ``model: {api, configuration: {type, azure_deployment |
model}, parameters: {max_tokens}}``, ``inputs`` and ``sample`` mappings. v2 (the
``prompty`` 2.x runtimes): ``model: gpt-4o`` or ``model: {id, provider, options:
{maxOutputTokens}}``, ``inputs`` as a list of ``{name, kind, default}`` (``kind: thread``
is the conversation history), ``template: {format: {kind}}``, ``tools``, ``outputs``.
``${env:NAME}`` / ``${env:NAME:default}`` and ``${file:path}`` may stand for any value.

The body is rendered whole and then cut at its role lines, as Prompty's parser does (the
same role-line pattern; each message's text stripped of leading and trailing blank
lines); each message's range and variables come from the body's own role lines when
they match the rendered messages one to one, else the whole body.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from budgetlens.files import FileSource
from budgetlens.formats.common import (
    Path_,
    check_completion_tokens,
    check_declared,
    located,
    output_limit,
    read_inside,
)
from budgetlens.formats.frontmatter import FileYaml, read_yaml, split_front_matter
from budgetlens.formats.model import (
    Located,
    Message,
    Problem,
    ProblemKind,
    PromptFile,
    Step,
)
from budgetlens.formats.request_shapes import openai_tools, prompty_outputs
from budgetlens.formats.templates import (
    fixed,
    jinja_segment_variables,
    jinja_variables,
    mustache_variables,
    render_jinja,
    render_mustache,
)
from budgetlens.source import LineIndex, Range

FORMAT = "prompty"
ROLES = ("assistant", "developer", "system", "user")
#: Prompty 2.x's role boundary (``prompty.parsers.prompty._BOUNDARY_RE``, without its
#: possessive quantifiers, which need Python 3.11): matched on a stripped line.
ROLE_LINE = re.compile(r"(?i)^\s*#?\s*(" + "|".join(ROLES) + r")(\[[^\]]*\])?\s*:\s*$")
_REF = re.compile(r"^\$\{(env|file):([^}]*)\}$")

V1_OUTPUT = ("model", "parameters", "max_tokens")
V2_OUTPUT = ("model", "options", "maxOutputTokens")


def read(text: str, path: str = "", inputs: Mapping[str, Any] | None = None,
         root: Path | None = None, files: FileSource | None = None) -> PromptFile:
    """The file's one step; with ``inputs`` its messages rendered with them.
    ``${file:...}`` is read only inside ``root``."""
    problems: list[Problem] = []
    index = LineIndex(text)
    split = split_front_matter(text)
    fy: FileYaml | None = None
    body, body_start = text, 0
    if split is not None:
        fy = read_yaml(split.yaml, split.yaml_start, index, problems)
        body, body_start = split.body, split.body_start
        # Prompty's loader drops the whitespace that opens the body (its ``\s*(.+)$``)
        lead = len(body) - len(body.lstrip())
        body, body_start = body[lead:], body_start + lead
    front = _resolve(fy, Path(path).parent if path else None, root, files, problems)
    version = _version(front)
    result = PromptFile(path, FORMAT, [], problems, version)
    _, history, _ = _inputs(front)
    plain = {history: ""} if history else {}  # the thread: messages, not text
    messages = _messages(body, body_start, index, _format(front), inputs, plain, problems)
    result.steps.append(_step(fy, front, version, path, messages, problems))
    return result


# long-function: one assignment per field of the step, in the order of Step's fields
def _step(fy: FileYaml | None, front: dict[str, Any], version: str, path: str,
          messages: list[Message], problems: list[Problem]) -> Step:
    if version == "v1":
        output = output_limit(fy, [V1_OUTPUT, V2_OUTPUT], V1_OUTPUT)
    else:
        output = output_limit(fy, [V2_OUTPUT, V1_OUTPUT], V2_OUTPUT)
    model = _model(fy, front)
    check_completion_tokens(model, output, problems)
    declared, history, samples = _inputs(front)
    check_declared(messages, declared, problems)
    name = front.get("name")
    return Step(
        name=name if isinstance(name, str) else path,
        messages=messages,
        model=model,
        output=output,
        tools=openai_tools(located(fy, "tools") or located(fy, "model", "parameters", "tools")),
        output_schema=prompty_outputs(located(fy, "outputs") or located(fy, "outputSchema")),
        history=history,
        inputs=located(fy, "inputs"),
        declared=declared,
        samples=samples,
        budgetlens=located(fy, "metadata", "budgetlens"),
    )


def _version(front: Mapping[str, Any]) -> str:
    model = front.get("model")
    if isinstance(model, str) or isinstance(front.get("inputs"), list):
        return "v2"
    if isinstance(model, dict) and ({"id", "options", "provider", "apiType"} & model.keys()):
        return "v2"
    if isinstance(model, dict) and ({"api", "configuration", "parameters", "connection"}
                                    & model.keys()):
        return "v1"
    return "v2"


_MODEL_PATHS: tuple[Path_, ...] = (
    ("model",), ("model", "id"), ("model", "configuration", "azure_deployment"),
    ("model", "configuration", "model"), ("model", "connection", "azure_deployment"),
    ("model", "configuration", "name"))


def _model(fy: FileYaml | None, front: Mapping[str, Any]) -> Located | None:
    for path in _MODEL_PATHS:
        value = _get(front, path)
        if isinstance(value, str) and value:
            rng = fy.range(*path) if fy is not None else None
            return Located(value, ".".join(str(p) for p in path), rng)
    return None


def _get(data: Any, path: Path_) -> Any:
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def _format(front: Mapping[str, Any]) -> str:
    template = front.get("template")
    kind: Any = template
    if isinstance(template, dict):
        kind = template.get("format", template.get("type"))
        if isinstance(kind, dict):
            kind = kind.get("kind")
    return "mustache" if kind == "mustache" else "jinja2"


def _inputs(front: Mapping[str, Any]) -> tuple[tuple[str, ...] | None, str | None,
                                               list[dict[str, Any]]]:
    """Declared input names (``None`` when the file declares none), the thread input and
    the sample inputs (``sample``, then each input's ``default`` / ``sample`` /
    ``example`` / plain value)."""
    raw = front.get("inputs")
    entries: list[tuple[str, Any]] = []
    if isinstance(raw, dict):
        entries = [(str(k), v) for k, v in raw.items()]
    elif isinstance(raw, list):
        entries = [(str(e["name"]), e) for e in raw if isinstance(e, dict) and "name" in e]
    history = next((name for name, spec in entries
                    if isinstance(spec, dict) and spec.get("kind") == "thread"), None)
    sample: dict[str, Any] = {}
    for name, spec in entries:
        if not isinstance(spec, dict):
            sample[name] = spec
            continue
        for key in ("sample", "default", "example"):
            if key in spec:
                sample[name] = spec[key]
                break
    if isinstance(front.get("sample"), dict):
        sample.update(front["sample"])
    declared = tuple(name for name, _ in entries) if raw is not None else None
    return declared, history, [sample] if sample else []


# ---------------------------------------------------------------- references


def _resolve(fy: FileYaml | None, folder: Path | None, root: Path | None,
             files: FileSource | None, problems: list[Problem]) -> dict[str, Any]:
    """The front matter with ``${env:...}`` and ``${file:...}`` resolved as far as the
    check may (no environment is read: a reference without a default is reported)."""
    if fy is None or not isinstance(fy.value, dict):
        return {}
    out = _walk(fy, fy.value, (), folder, root, files, problems)
    return out if isinstance(out, dict) else {}


def _walk(fy: FileYaml, value: Any, path: Path_, folder: Path | None, root: Path | None,
          files: FileSource | None, problems: list[Problem]) -> Any:
    if isinstance(value, dict):
        return {k: _walk(fy, v, (*path, k), folder, root, files, problems)
                for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(fy, v, (*path, i), folder, root, files, problems)
                for i, v in enumerate(value)]
    if isinstance(value, str):
        match = _REF.match(value.strip())
        legacy = value.startswith("file:") and path[:1] == ("sample",)
        if match is None and not legacy:
            return value
        rng = fy.range(*path) or fy.whole()
        if match is not None and match.group(1) == "env":
            return _env(match.group(2), rng, problems)
        ref = match.group(2) if match is not None else value[len("file:"):]
        return _file(ref.strip(), folder, root, files, rng, problems)
    return value


def _env(ref: str, rng: Range, problems: list[Problem]) -> Any:
    name, sep, default = ref.partition(":")
    if sep:
        return default
    problems.append(Problem(ProblemKind.ENV_UNRESOLVED,
                            f"${{env:{name}}} has no default; its value is not known to"
                            " the check", rng))
    return None


def _file(ref: str, folder: Path | None, root: Path | None, files: FileSource | None,
          rng: Range, problems: list[Problem]) -> Any:
    target = (folder or Path(".")) / ref
    text, why = read_inside(target, root, files)
    if text is None:
        problems.append(Problem(ProblemKind.FILE_REFERENCE, f"${{file:{ref}}}: {why}", rng))
        return None
    try:
        return json.loads(text) if target.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        problems.append(Problem(ProblemKind.FILE_REFERENCE,
                                f"${{file:{ref}}} cannot be read: {exc}", rng))
        return None


# ---------------------------------------------------------------- body


def _messages(body: str, body_start: int, index: LineIndex, fmt: str,
              inputs: Mapping[str, Any] | None, plain: Mapping[str, Any],
              problems: list[Problem]) -> list[Message]:
    body_range = index.range(body_start, body_start + len(body))
    try:
        if fmt == "mustache":
            rendered, names = render_mustache(body, inputs, plain), mustache_variables(body)
        else:
            rendered, names = render_jinja(body, inputs, plain), jinja_variables(body)
    except Exception as exc:  # the template library's own errors, whatever their class
        problems.append(Problem(ProblemKind.TEMPLATE, f"template not rendered: {exc}",
                                body_range))
        return []
    parsed = [(role, fixed(text)) for role, text in split_messages(rendered)]
    segments = _segments(body)
    if [role for role, _ in parsed] != [role for role, _, _ in segments]:
        return [Message(role, text, tuple(names), body_range) for role, text in parsed]
    out = []
    for (role, text), (_, start, end) in zip(parsed, segments, strict=True):
        part = body[start:end]
        used = mustache_variables(part) if fmt == "mustache" else \
            jinja_segment_variables(part, names)
        out.append(Message(role, text, tuple(used),
                           index.range(body_start + start, body_start + end),
                           history=any(name in plain for name in used)))
    return out


def split_messages(rendered: str) -> list[tuple[str, str]]:
    """Rendered text cut into (role, text) at its role lines, as Prompty's parser cuts it
    (text before the first role line is a system message)."""
    out: list[tuple[str, str]] = []
    role, lines = "system", []
    for line in rendered.splitlines():
        match = ROLE_LINE.match(line.strip())
        if match is None:
            lines.append(line)
            continue
        if lines:
            out.append((role, "\n".join(lines).strip("\n")))
        role, lines = match.group(1).lower(), []
    if lines:
        out.append((role, "\n".join(lines).strip("\n")))
    return out


def _segments(body: str) -> list[tuple[str, int, int]]:
    """(role, start, end) of each message's template in ``body``: from after its role line
    to the next role line, as the parser would cut the unrendered text."""
    cuts: list[tuple[str, int, int]] = []  # role, line start, line end
    offset = 0
    for line in body.splitlines(keepends=True):
        match = ROLE_LINE.match(line.strip())
        if match is not None:
            cuts.append((match.group(1).lower(), offset, offset + len(line)))
        offset += len(line)
    out: list[tuple[str, int, int]] = []
    first = cuts[0][1] if cuts else len(body)
    if body[:first]:
        out.append(("system", 0, first))
    for i, (role, _, end) in enumerate(cuts):
        stop = cuts[i + 1][1] if i + 1 < len(cuts) else len(body)
        if body[end:stop]:  # a line, even a blank one, makes a message (as the parser)
            out.append((role, end, stop))
    return out
