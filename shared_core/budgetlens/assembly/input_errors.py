"""Readable messages for invalid input: one line per problem, naming the field.

>>> from pydantic import BaseModel
>>> class Doc(BaseModel):
...     id: str
>>> try:
...     Doc.model_validate({})
... except Exception as exc:
...     print(describe_validation_error(exc, "docs[3]"))
['docs[3].id: field required']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

_EXPECTED = {
    "string_type": "expected a string",
    "int_type": "expected an integer",
    "int_from_float": "expected an integer",
    "float_type": "expected a number",
    "bool_type": "expected true or false",
    "list_type": "expected an array",
    "dict_type": "expected an object",
    "model_type": "expected an object",
    "model_attributes_type": "expected an object",
    "datetime_type": "expected an ISO 8601 date-time string",
}


_PLUMBING = frozenset({"str", "int", "float", "bool", "list", "dict"})
MAX_PATH_CHARS = 120


class InputError(ValueError):
    """Input that does not describe what it should; ``messages`` name each bad field."""

    def __init__(self, messages: Sequence[str]) -> None:
        self.messages = tuple(messages)
        super().__init__("\n".join(self.messages))


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def field_path(root: str, loc: Sequence[str | int]) -> str:
    """``("docs", 3, "schema_type")`` style locations as ``docs[3].schema_type``."""
    out = root
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif part.startswith(("function-", "json-or-python")) or part in _PLUMBING:
            continue  # validator plumbing (union members of JSON values), not a field
        else:
            out = f"{out}.{part}" if out else part
    if len(out) > MAX_PATH_CHARS:
        out = out[:MAX_PATH_CHARS] + "..."
    return out or "(top level)"


def describe_validation_error(exc: ValidationError, root: str = "") -> list[str]:
    """One ``path: problem`` line per error of a pydantic ``ValidationError``."""
    lines: list[str] = []
    for err in exc.errors(include_url=False):
        kind = err["type"]
        path = field_path(root, err["loc"])
        if kind == "missing":
            problem = "field required"
        elif kind == "extra_forbidden":
            problem = "unknown field"
        elif kind == "json_invalid":
            problem = f"invalid JSON ({err.get('ctx', {}).get('error', err['msg'])})"
        elif kind in _EXPECTED:
            problem = f"{_EXPECTED[kind]}, got {json_type(err.get('input'))}"
        elif kind == "value_error":
            problem = str(err.get("ctx", {}).get("error", err["msg"]))
            if not err["loc"] and ": " in problem:  # model-level check naming its own field
                lines.append(f"{root}.{problem}" if root else problem)
                continue
        else:
            msg = err["msg"]
            problem = msg[:1].lower() + msg[1:]
        lines.append(f"{path}: {problem}")
    return lines
