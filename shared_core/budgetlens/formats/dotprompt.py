"""Dotprompt files (``*.prompt``: Firebase Genkit, Firebase AI Logic server templates).

YAML front matter (``model: googleai/gemini-2.5-flash``, ``config.maxOutputTokens``,
``input.schema`` in Picoschema, ``input.default``, ``output.schema``, ``tools``), then a
Handlebars body with ``{{role "system"}}``, ``{{history}}``, ``{{media url=...}}``,
``{{section "name"}}``, partials ``{{>name}}`` (files ``_name.prompt``), ``{{#if}}``,
``{{#each}}``. Other tools use ``.prompt`` too: a file is Dotprompt when its front
matter is a mapping with one of Dotprompt's keys, or its body uses ``{{role ...}}``.

The body is rendered by ``dotpromptz_handlebars`` (the Handlebars engine of Dotprompt's
own Python runtime, Apache-2.0), without HTML escaping as Dotprompt renders, with its
helpers giving the runtime's markers; the rendered text is cut into messages at those
markers as the runtime's ``to_messages`` does (pieces of whitespace only dropped, text
not trimmed, text before the first role marker a user message, text after
``{{history}}`` a model message). A helper the reader does not know renders ``""`` (and
its block body once) and is reported.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dotpromptz_handlebars import Handlebars, SafeString

from budgetlens.files import FileSource
from budgetlens.formats.common import (
    check_completion_tokens,
    check_declared,
    located,
    output_limit,
    read_inside,
)
from budgetlens.formats.frontmatter import FileYaml, read_yaml, split_front_matter
from budgetlens.formats.model import Message, Problem, ProblemKind, PromptFile, Step
from budgetlens.formats.request_shapes import dotprompt_schema, openai_tools
from budgetlens.formats.templates import BlankInputs, fixed
from budgetlens.source import LineIndex, Range

FORMAT = "dotprompt"
OUTPUT = ("config", "maxOutputTokens")
FRONT_KEYS = frozenset({"model", "config", "input", "output", "tools", "name", "variant",
                        "description", "metadata", "toolChoice", "maxTurns", "raw", "ext"})

_ROLE_MARK = "<<<dotprompt:role:"
_HISTORY_MARK = "<<<dotprompt:history>>>"
_ROLE_AND_HISTORY = re.compile(r"(<<<dotprompt:(?:role:[a-z]+|history))>>>")
_MEDIA_AND_SECTION = re.compile(r"(<<<dotprompt:(?:media:url|section).*?)>>>")
_TAG = re.compile(r"\{\{\{?~?\s*([#/^>!&]?)\s*(.*?)\s*~?\}?\}\}", re.DOTALL)
_ARG = re.compile(r'"[^"]*"|\'[^\']*\'|\([^)]*\)|[^\s]+')
_ROLE_TAG = re.compile(r"\{\{~?\s*(?:role\s+[\"']([a-z]+)[\"']|(history))\s*~?\}\}")
_BUILTIN = frozenset({"if", "unless", "each", "with", "lookup", "log", "else", "role",
                      "history", "media", "section", "json", "ifEquals", "unlessEquals"})
_LITERAL = re.compile(r"^(?:true|false|null|undefined|-?\d+(?:\.\d+)?)$")


def looks_like_dotprompt(text: str) -> bool:
    """Whether a ``.prompt`` file is Dotprompt (not another tool's ``.prompt``)."""
    split = split_front_matter(text, comments=True)
    if split is not None:
        return any(re.match(rf"^{key}\s*:", split.yaml, re.MULTILINE) for key in FRONT_KEYS)
    return _ROLE_TAG.search(text) is not None


def read(text: str, path: str = "", inputs: Mapping[str, Any] | None = None,
         root: Path | None = None, files: FileSource | None = None) -> PromptFile:
    """The file's one step; with ``inputs`` its messages rendered with them. Partials are
    read from ``_name.prompt`` files of the file's folder and its parents inside
    ``root``."""
    problems: list[Problem] = []
    index = LineIndex(text)
    split = split_front_matter(text, comments=True)
    fy: FileYaml | None = None
    body, body_start = text, 0
    if split is not None:
        fy = read_yaml(split.yaml, split.yaml_start, index, problems)
        body, body_start = split.body, split.body_start
    # the runtime renders the body stripped; offsets stay those of the file
    lead = len(body) - len(body.lstrip())
    template = body.strip()
    start = body_start + lead
    front = fy.value if fy is not None and isinstance(fy.value, dict) else {}
    folder = Path(path).parent if path else None
    renderer = _Renderer(template, start, index, folder, root, files, problems)
    messages = renderer.messages(_context(front, inputs))
    result = PromptFile(path, FORMAT, [], problems)
    result.steps.append(_step(fy, front, path, messages, renderer, problems))
    return result


def _step(fy: FileYaml | None, front: Mapping[str, Any], path: str, messages: list[Message],
          renderer: _Renderer, problems: list[Problem]) -> Step:
    model = located(fy, "model")
    output = output_limit(fy, [OUTPUT], OUTPUT)
    check_completion_tokens(model, output, problems)
    declared = _declared(front)
    check_declared(messages, declared, problems)
    default = _get(front, "input", "default")
    name = front.get("name")
    return Step(
        name=name if isinstance(name, str) else Path(path).stem,
        messages=messages,
        model=model,
        output=output,
        tools=openai_tools(located(fy, "tools")),
        output_schema=dotprompt_schema(located(fy, "output", "schema")),
        history="history" if renderer.history else None,
        inputs=located(fy, "input", "schema"),
        declared=declared,
        samples=[dict(default)] if isinstance(default, dict) else [],
        budgetlens=located(fy, "metadata", "budgetlens"),
    )


def _get(data: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def _declared(front: Mapping[str, Any]) -> tuple[str, ...] | None:
    """The input names of ``input.schema`` (Picoschema ``name?(type, desc)`` keys, or a
    JSON Schema's ``properties``) and ``input.default``; ``None`` when there is no
    schema."""
    schema = _get(front, "input", "schema")
    if not isinstance(schema, dict):
        return None
    keys = schema["properties"].keys() if isinstance(schema.get("properties"), dict) \
        else schema.keys()
    names = [re.split(r"[?(\s]", str(key), maxsplit=1)[0] for key in keys]
    default = _get(front, "input", "default")
    if isinstance(default, dict):
        names += [str(key) for key in default]
    return tuple(names)


def _context(front: Mapping[str, Any], inputs: Mapping[str, Any] | None) -> Any:
    if inputs is not None:
        return {**(_get(front, "input", "default") or {}), **inputs}
    return BlankInputs()


class _Renderer:
    """The body rendered and cut into messages, with each message's source range."""

    def __init__(self, template: str, start: int, index: LineIndex, folder: Path | None,
                 root: Path | None, files: FileSource | None,
                 problems: list[Problem]) -> None:
        self.template = template
        self.start = start
        self.index = index
        self.folder = folder
        self.root = root
        self.files = files
        self.problems = problems
        self.history = False
        self.partials: dict[str, str] = {}

    def range(self, start: int, end: int) -> Range:
        return self.index.range(self.start + start, self.start + end)

    def messages(self, context: Any) -> list[Message]:
        hb = Handlebars(escape_html=False)
        self._helpers(hb)
        self._load_partials(hb, self.template, 0)
        try:
            rendered = hb.compile(self.template)(context)
        except Exception as exc:  # the library's own errors, whatever their class
            self.problems.append(Problem(ProblemKind.TEMPLATE,
                                         f"template not rendered: {exc}",
                                         self.range(0, len(self.template))))
            return []
        return self._cut(rendered)

    def _helpers(self, hb: Handlebars) -> None:
        def role(args: list[Any], options: Any) -> str:
            return SafeString(f"<<<dotprompt:role:{args[0]}>>>") if args else ""

        def history(args: list[Any], options: Any) -> str:
            self.history = True
            return SafeString(_HISTORY_MARK)

        def media(args: list[Any], options: Any) -> str:
            return SafeString(f"<<<dotprompt:media:url {options.hash_value('url')}>>>")

        def section(args: list[Any], options: Any) -> str:
            return SafeString(f"<<<dotprompt:section {args[0] if args else ''}>>>")

        def json_(args: list[Any], options: Any) -> str:
            return "" if not args or isinstance(args[0], Mapping) else _json_text(args[0])

        for name, fn in (("role", role), ("history", history), ("media", media),
                         ("section", section), ("json", json_),
                         ("ifEquals", _block_once), ("unlessEquals", _block_once)):
            hb.register_helper(name, fn)
        for name, at in _unknown_helpers(self.template):
            hb.register_helper(name, _block_once)
            self.problems.append(Problem(
                ProblemKind.HELPER_UNKNOWN,
                f"helper '{name}' is not one of Dotprompt's; counted as empty text",
                self.range(at, at + len(name))))

    def _load_partials(self, hb: Handlebars, template: str, depth: int) -> None:
        for match in _TAG.finditer(template):
            if match.group(1) != ">" or depth > 8:
                continue
            name = match.group(2).split()[0] if match.group(2).split() else ""
            if not name or name in self.partials or name.startswith(("(", "@")):
                continue
            source = self._partial(name, match.start(), match.end(), depth == 0)
            self.partials[name] = source
            hb.register_partial(name, source)
            self._load_partials(hb, source, depth + 1)

    def _partial(self, name: str, start: int, end: int, top: bool) -> str:
        why = "no workspace root"
        folder = self.folder
        while folder is not None and self.root is not None:
            text, why_here = read_inside(folder / f"_{name}.prompt", self.root, self.files)
            if text is not None:
                split = split_front_matter(text, comments=True)
                return split.body if split is not None else text
            why = why_here or why
            if folder == folder.parent or folder.resolve() == self.root.resolve():
                break
            folder = folder.parent
        rng = self.range(start, end) if top else self.range(0, len(self.template))
        self.problems.append(Problem(ProblemKind.PARTIAL_MISSING,
                                     f"partial '{name}' not found (_{name}.prompt): {why}",
                                     rng))
        return ""

    def _cut(self, rendered: str) -> list[Message]:
        parsed = to_messages(rendered)
        segments = self._segments()
        same = [role for role, _ in parsed] == [role for role, _, _ in segments]
        out = []
        for i, (role, text) in enumerate(parsed):
            start, end = (segments[i][1], segments[i][2]) if same else (0, len(self.template))
            used = variables(self.template[start:end])
            out.append(Message(role, text, tuple(used), self.range(start, end),
                               history=role == "model" and same and
                               self.template[:start].rstrip().endswith("history}}")))
        return out

    def _segments(self) -> list[tuple[str, int, int]]:
        """(role, start, end) of each message's template, as ``to_messages`` would cut the
        unrendered template; a partial's own role markers cut it too, and what comes from
        a partial has the partial tag's range."""
        out: list[list[Any]] = []  # role, start, end, has text
        current: list[Any] = ["user", None, None, False]
        for kind, value, start, end in self._pieces():
            if kind == "text" and not value:
                continue
            if kind == "text":
                current[1] = start if current[1] is None else min(current[1], start)
                current[2] = end if current[2] is None else max(current[2], end)
                current[3] = current[3] or bool(value.strip())
                continue
            if current[3]:
                out.append(current)
            elif kind == "role":
                current[0] = value
                continue
            current = [value, None, None, False]
        if current[3]:
            out.append(current)
        return [(role, start, end) for role, start, end, _ in out]

    def _pieces(self) -> list[tuple[str, str, int, int]]:
        """The template as ("role" | "history", role, start, end) markers and ("text",
        text, start, end) pieces, partials' markers and text spliced in at their tags."""
        marks = sorted([(m.start(), m.end(), m) for m in _ROLE_TAG.finditer(self.template)]
                       + [(m.start(), m.end(), m) for m in _TAG.finditer(self.template)
                          if m.group(1) == ">"], key=lambda t: t[0])
        pieces: list[tuple[str, str, int, int]] = []
        at = 0
        for start, end, match in marks:
            pieces.append(("text", self.template[at:start], at, start))
            at = end
            if match.re is _ROLE_TAG:
                pieces.append(_marker(match, start, end))
                continue
            name = (match.group(2).split() or [""])[0]
            source = self.partials.get(name, "")
            inner = 0
            for tag in _ROLE_TAG.finditer(source):
                pieces.append(("text", source[inner:tag.start()], start, end))
                pieces.append(_marker(tag, start, end))
                inner = tag.end()
            pieces.append(("text", source[inner:], start, end))
        pieces.append(("text", self.template[at:], at, len(self.template)))
        return pieces


def _marker(tag: re.Match[str], start: int, end: int) -> tuple[str, str, int, int]:
    if tag.group(1):
        return ("role", tag.group(1), start, end)
    return ("history", "model", start, end)


def _block_once(args: list[Any], options: Any) -> str:
    """A block helper's body once (an unknown helper, ``ifEquals``), else ``""``."""
    fn = getattr(options, "fn", None)
    return str(fn(options.context)) if callable(fn) else ""


def _json_text(value: Any) -> str:
    return json.dumps(value, indent=2)


def to_messages(rendered: str) -> list[tuple[str, str]]:
    """(role, text) of the rendered text, as Dotprompt's ``to_messages`` makes them (text
    parts joined; a media or section marker is not text)."""
    sources: list[list[str]] = [["user", ""]]
    for piece in (p for p in _ROLE_AND_HISTORY.split(rendered) if p.strip()):
        if piece.startswith(_ROLE_MARK):
            if sources[-1][1].strip():
                sources.append([piece[len(_ROLE_MARK):], ""])
            else:
                sources[-1][0] = piece[len(_ROLE_MARK):]
        elif piece.startswith(_HISTORY_MARK[:-3]):
            sources.append(["model", ""])
        else:
            sources[-1][1] += piece
    out = []
    for role, source in sources:
        if not source:
            continue
        parts = [p for p in _MEDIA_AND_SECTION.split(source) if p.strip()]
        out.append((role, fixed("".join(p for p in parts
                                        if not p.startswith("<<<dotprompt:")))))
    return out


def _unknown_helpers(template: str) -> list[tuple[str, int]]:
    """Helpers called in ``template`` (a name with arguments, or a block) that are not
    Dotprompt's, with the offset of each first call."""
    found: list[tuple[str, int]] = []
    for match in _TAG.finditer(template):
        sigil, inner = match.group(1), match.group(2)
        args = _ARG.findall(inner)
        if sigil in ("/", ">", "!") or not args:
            continue
        name = args[0]
        called = sigil == "#" or len(args) > 1
        if called and name not in _BUILTIN and not name.startswith(("@", ".", "this")) \
                and name not in [n for n, _ in found]:
            found.append((name, match.start(2)))
    return found


def variables(template: str) -> list[str]:
    """The input names a Handlebars template reads (first path segment), in order, each
    once; names inside ``{{#each}}`` / ``{{#with}}`` bodies (an item's fields) and
    ``@data`` left out."""
    names: list[str] = []
    scoped = 0
    for match in _TAG.finditer(template):
        sigil, inner = match.group(1), match.group(2)
        args = _ARG.findall(inner.split(" as |")[0])
        if sigil == "!" or not args:
            continue
        if sigil == "/":
            scoped -= args[0] in ("each", "with") and scoped > 0
            continue
        head, rest = args[0], args[1:]
        called = sigil in ("#", "^") or bool(rest) or head in _BUILTIN
        paths = rest if called or sigil == ">" else [head]
        if not scoped:
            for token in paths:
                _add_path(token.split("=", 1)[-1], names)
        if sigil == "#" and head in ("each", "with"):
            scoped += 1
    return names


def _add_path(token: str, names: list[str]) -> None:
    if token[:1] in "\"'(@" or _LITERAL.match(token):
        return
    token = re.sub(r"^(?:\.\./)+|^this\.|^\./", "", token)
    first = re.split(r"[./\[]", token, maxsplit=1)[0]
    if first and first not in ("this", ".") and first not in names:
        names.append(first)
