"""``user_parts.template`` placeholders.

A placeholder is ``{identifier}``; ``{{`` and ``}}`` are literal braces. The fixed cost of a
template is the token count of its text with every placeholder replaced by the empty string
and the escapes unescaped (what the template costs before anything is put into it).

>>> parse_template("Q: {question}\\nJSON: {{}}").emptied
'Q: \\nJSON: {}'
"""

from __future__ import annotations

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


def _is_identifier(name: str) -> bool:
    return name.isidentifier() and name.isascii()


def parse_template(text: str) -> ParsedTemplate:
    """Find the placeholders and the syntax errors of a template.

    Errors: an unclosed ``{``, a ``{...}`` whose content is not an identifier, a single ``}``.
    With errors the text is still emptied as well as it can be (a broken brace stays as is).
    """
    out: list[str] = []
    placeholders: list[Placeholder] = []
    problems: list[TemplateProblem] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch == "{":
            if text.startswith("{{", i):
                out.append("{")
                i += 2
                continue
            close = text.find("}", i + 1)
            brace = text.find("{", i + 1)
            if close == -1 or (brace != -1 and brace < close):
                problems.append(TemplateProblem(i, i + 1, "unclosed '{': close the placeholder"
                                                " with '}' or write '{{' for a literal brace"))
                out.append("{")
                i += 1
                continue
            name = text[i + 1:close]
            if _is_identifier(name):
                placeholders.append(Placeholder(name, i, close + 1))
            else:
                shown = name if len(name) <= 40 else name[:37] + "..."
                problems.append(TemplateProblem(
                    i, close + 1, f"invalid placeholder '{{{shown}}}': a placeholder is"
                    " {identifier}; write '{{' and '}}' for literal braces"))
                out.append(text[i:close + 1])
            i = close + 1
            continue
        if ch == "}":
            if text.startswith("}}", i):
                out.append("}")
                i += 2
                continue
            problems.append(TemplateProblem(i, i + 1, "single '}': write '}}' for a literal"
                                            " brace"))
            out.append("}")
            i += 1
            continue
        j = i
        while j < n and text[j] not in "{}":
            j += 1
        out.append(text[i:j])
        i = j
    return ParsedTemplate(text, "".join(out), tuple(placeholders), tuple(problems))
