"""``user_parts.template`` placeholders.

A template is filled with ``str.format(**values)``, so a placeholder follows ``str.format``'s
replacement-field syntax, filled by name: ``{name}``, where ``name`` is a Python identifier in
any script (``{question}``, ``{質問}``), optionally followed by attribute and index parts
(``{user.name}``, ``{items[0]}``), a conversion (``!r``, ``!s``, ``!a``) and a format spec
(``{score:>6}``), whose spec may hold nested fields one level deep (``{q:>{w}}``), as in
``str.format``. ``{{`` and ``}}`` are literal braces. A positional field (``{}``, ``{0}``) is
an error: nothing fills it by position. The fixed cost of a template is the token count of its
text with every placeholder filled with the empty string (a conversion or format spec applied
to it, so ``{x:>6}`` costs its six blanks; a nested field is filled with the empty string
too, so ``{q:>{w}}`` costs nothing) and the escapes unescaped: what the template costs
before anything is put into it.

>>> parse_template("Q: {question}\\nJSON: {{}}").emptied
'Q: \\nJSON: {}'
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Placeholder:
    name: str
    start: int  # offsets in the template text, the braces included
    end: int


@dataclass(frozen=True)
class TemplateProblem:
    start: int
    end: int
    message: str


@dataclass(frozen=True)
class ParsedTemplate:
    text: str
    emptied: str
    placeholders: tuple[Placeholder, ...]
    problems: tuple[TemplateProblem, ...]


#: What may follow the name in a field: ``.attribute`` and ``[index]`` parts.
_FIELD_REST = re.compile(r"(?:\.[^\W\d]\w*|\[[^\]]+\])*")
_CONVERSIONS: dict[str, Callable[[object], str]] = {"r": repr, "s": str, "a": ascii}


def _field_problem(content: str) -> str | None:
    """Why ``content`` (the text between the braces) is not a named str.format field."""
    name_end = len(content)
    for stop in "!:":
        at = content.find(stop)
        if at != -1 and "[" not in content[:at]:
            name_end = min(name_end, at)
    field_name, tail = content[:name_end], content[name_end:]
    arg = re.match(r"[^.\[]*", field_name)
    arg_name = arg.group(0) if arg else ""
    if arg_name == "" or arg_name.isdigit():
        return ("a positional field: the template is filled by name, write {name} with a"
                " Python identifier")
    if not arg_name.isidentifier():
        return (f"{arg_name!r} is not a Python identifier (letters of any script, digits and"
                " '_', not starting with a digit)")
    if _FIELD_REST.fullmatch(field_name, len(arg_name)) is None:
        return f"invalid attribute or index part after {arg_name!r}"
    if tail.startswith("!"):
        conversion = tail[1:].split(":", 1)[0]
        if conversion not in _CONVERSIONS:
            return f"unknown conversion '!{conversion}' (use !r, !s or !a)"
    if ":" in tail and not _spec_accepted(tail.split(":", 1)[1]):
        return f"invalid format spec {tail.split(':', 1)[1]!r}"
    return None


def _spec_accepted(spec: str) -> bool:
    """``spec`` formats a string, an integer or a float (str.format would accept it for a
    value of one of those types)."""
    for value in ("", 0, 0.0):
        try:
            format(value, spec)
        except (ValueError, TypeError):
            continue
        return True
    return False


def _emptied(content: str) -> str:
    """The text the field gives when filled with the empty string."""
    spec_at = content.find(":")
    bang = content.find("!")
    conversion = content[bang + 1] if bang != -1 and (spec_at == -1 or bang < spec_at) else None
    value = _CONVERSIONS[conversion]("") if conversion in _CONVERSIONS else ""
    if spec_at == -1:
        return value
    try:
        return format(value, content[spec_at + 1:])
    except (ValueError, TypeError):  # a spec for numbers: its width is unknown here
        return ""


def _nested_field_end(text: str, start: int) -> int | None:
    """The index of the ``}`` that closes the field opening at ``start`` when its format spec
    holds nested fields (``{q:>{w}}``, one level deep, as ``str.format`` allows); None when
    the field has none, or nests deeper."""
    depth, spec, index = 0, False, False
    for j in range(start + 1, len(text)):
        c = text[j]
        if c == "{":
            if depth == 1 or not spec:
                return None
            depth = 1
        elif c == "}":
            if depth == 0:
                return j
            depth = 0
        elif depth == 0 and not spec:
            if c == "[":
                index = True
            elif c == "]":
                index = False
            elif c == ":" and not index:
                spec = True
    return None


def _nested_field(text: str, start: int, end: int
                  ) -> tuple[str | None, str, list[Placeholder]]:
    """The problem, emptied text and nested placeholders of the field ``text[start:end+1]``
    whose spec holds nested fields: each is a named field filled with the empty string."""
    content = text[start + 1:end]
    spec_at = content.find(":")
    problem = _field_problem(content[:spec_at])
    nested: list[Placeholder] = []
    filled = content[:spec_at + 1]
    for m in re.finditer(r"\{([^{}]*)\}|[^{}]+", content[spec_at + 1:]):
        inner = m.group(1)
        if inner is None:
            filled += m.group(0)
            continue
        problem = problem or _field_problem(inner)
        name = re.split(r"[.\[!:]", inner, maxsplit=1)[0]
        at = start + 1 + spec_at + 1 + m.start()
        nested.append(Placeholder(name, at, at + len(m.group(0))))
    return problem, _emptied(filled), nested


def _nested_placeholder(text: str, start: int, placeholders: list[Placeholder]
                        ) -> tuple[str, int] | None:
    """The emptied text of a valid field opening at ``start`` whose spec holds nested fields,
    and the index after it (its placeholders added); None for anything else."""
    end = _nested_field_end(text, start)
    if end is None:
        return None
    problem, emptied, nested = _nested_field(text, start, end)
    if problem is not None:
        return None
    name = re.split(r"[.\[!:]", text[start + 1:end], maxsplit=1)[0]
    placeholders += [Placeholder(name, start, end + 1), *nested]
    return emptied, end + 1


def _closing_brace(text: str, i: int, problems: list[TemplateProblem]) -> int:
    """The index after the ``}`` at ``i``: ``}}`` is a literal brace, a single one a problem."""
    if text.startswith("}}", i):
        return i + 2
    problems.append(TemplateProblem(i, i + 1, "single '}': write '}}' for a literal brace"))
    return i + 1


def parse_template(text: str) -> ParsedTemplate:
    """Find the placeholders and the syntax errors of a template.

    Errors: an unclosed ``{``, a ``{...}`` that is not a named field, a single ``}``.
    With errors the text is still emptied as well as it can be (a broken brace stays as is).
    """
    out: list[str] = []
    placeholders: list[Placeholder] = []
    problems: list[TemplateProblem] = []
    i, n = 0, len(text)
    close = 0  # the first '}' after the last search's start (-1: none; 0: not searched yet)
    while i < n:
        ch = text[i]
        if ch == "{":
            if text.startswith("{{", i):
                out.append("{")
                i += 2
                continue
            if close != -1 and close <= i:
                # searched again only once passed: a text of unclosed '{' before one '}'
                # would else be read to that '}' from each (quadratic)
                close = text.find("}", i + 1)
            brace = text.find("{", i + 1)
            nested = _nested_placeholder(text, i, placeholders) if close != -1 and \
                brace != -1 and brace < close else None
            if nested is not None:
                out.append(nested[0])
                i = nested[1]
                continue
            if close == -1 or (brace != -1 and brace < close):
                problems.append(TemplateProblem(i, i + 1, "unclosed '{': close the placeholder"
                                                " with '}' or write '{{' for a literal brace"))
                out.append("{")
                i += 1
                continue
            content = text[i + 1:close]
            problem = _field_problem(content)
            if problem is None:
                name = re.split(r"[.\[!:]", content, maxsplit=1)[0]
                placeholders.append(Placeholder(name, i, close + 1))
                out.append(_emptied(content))
            else:
                shown = content if len(content) <= 40 else content[:37] + "..."
                problems.append(TemplateProblem(
                    i, close + 1, f"invalid placeholder '{{{shown}}}': {problem};"
                    " write '{{' and '}}' for literal braces"))
                out.append(text[i:close + 1])
            i = close + 1
            continue
        if ch == "}":
            out.append("}")
            i = _closing_brace(text, i, problems)
            continue
        j = i
        while j < n and text[j] not in "{}":
            j += 1
        out.append(text[i:j])
        i = j
    return ParsedTemplate(text, "".join(out), tuple(placeholders), tuple(problems))
