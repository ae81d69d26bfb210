"""Validating plain data against a shape or a pydantic model without losing the good parts.

A wrong value is reported at its path and dropped, then the rest is validated again, so one
typo does not hide every other setting. A shape (``contract/shapes.py``) is first read
without pydantic; only input that read does not accept goes through its pydantic model.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload

from budgetlens.contract.shapes import Shape

if TYPE_CHECKING:  # pydantic loads with the first input a shape's light read leaves to it
    from pydantic import BaseModel

M = TypeVar("M", bound="BaseModel")
S = TypeVar("S", bound=Shape)
Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class FieldError:
    path: Path_
    message: str
    kind: str  # pydantic's error type, e.g. "missing", "int_type", "greater_than"


def dotted(path: Path_) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_QUOTED_KINDS = {"int_type": ("an integer", r"[+-]?[0-9][0-9_]*"),
                 "bool_type": ("a boolean", r"(?i:true|false|yes|no|on|off)")}


def _quoted_scalar(kind: str, value: Any) -> str | None:
    """The message for a number or boolean written as a string (``"512"``), else ``None``."""
    if kind not in _QUOTED_KINDS or not isinstance(value, str):
        return None
    expected, pattern = _QUOTED_KINDS[kind]
    hint = " (remove the quotes)" if re.fullmatch(pattern, value.strip()) else ""
    return f"expected {expected}, got the string {_shown(value)}{hint}"


class _Copies:
    """The containers a lenient validation copied before dropping something from them: by
    the id of the caller's container (so one reached twice is copied once, as
    ``copy.deepcopy`` shared it) and by their own id."""

    def __init__(self, work: dict[str, Any]) -> None:
        self.of: dict[int, Any] = {}  # id of the caller's container -> its copy
        self.own: dict[int, Any] = {id(work): work}  # id -> a container of this validation

    def owned(self, node: Any) -> Any:
        """``node`` if it is a copy already, else its copy (made once)."""
        if id(node) in self.own:
            return node
        copy = self.of.get(id(node))
        if copy is None:
            copy = dict(node) if isinstance(node, dict) else list(node)
            self.of[id(node)] = self.own[id(copy)] = copy
        return copy


def _delete(work: dict[str, Any], path: Path_, copies: _Copies) -> bool:
    """Remove the deepest existing element of ``path`` from ``work``.

    ``work`` shares its containers with the caller's data: each container on the way is
    replaced by its copy (``copies``) before it is changed, so the caller's data is never
    modified.
    """
    parents: list[tuple[Any, str | int]] = []
    node: Any = work
    for part in path:
        if parents and isinstance(node, (dict, list)):  # it may be changed: use the copy
            node = copies.owned(node)
            container, last = parents[-1]
            container[last] = node
        in_dict = isinstance(node, dict) and isinstance(part, str) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if not (in_dict or in_list):
            break
        parents.append((node, part))
        node = node[part]
    if not parents:
        return False
    container, last = parents[-1]
    if isinstance(container, list):
        # keep the indices of later items: replace with an empty mapping
        container[last] = {}  # type: ignore[index]
    else:
        del container[last]
    return True


@overload
def validate_lenient(model: type[S], data: dict[str, Any],
                     *, rounds: int = 5) -> tuple[S | None, list[FieldError]]: ...


@overload
def validate_lenient(model: type[M], data: dict[str, Any],
                     *, rounds: int = 5) -> tuple[M | None, list[FieldError]]: ...


def validate_lenient(model: type[Any], data: dict[str, Any],
                     *, rounds: int = 5) -> tuple[Any, list[FieldError]]:
    """Validate ``data``; wrong values are reported and dropped until the rest validates.

    ``data`` is not modified: what is dropped is dropped from copies of the containers on
    its path only (see ``_delete``), the rest is validated as it is. A shape answers valid
    input itself; anything else is validated by its pydantic model, whose result is given in
    the shape's form.
    """
    if isinstance(model, type) and issubclass(model, Shape):
        light = model.light_validate(data)
        if light is not None:
            return light, []
        found, errors = _lenient(model.pydantic(), data, rounds)
        return (model.from_pydantic(found) if found is not None else None), errors
    return _lenient(model, data, rounds)


def _lenient(model: type[M], data: dict[str, Any],
             rounds: int) -> tuple[M | None, list[FieldError]]:
    from pydantic import ValidationError  # start-up speed: valid input never gets here

    errors: list[FieldError] = []
    work = dict(data)
    copies = _Copies(work)
    for _ in range(rounds):
        try:
            return model.model_validate(work), errors
        except ValidationError as exc:
            progressed = False
            for err in exc.errors(include_url=False):
                loc = tuple(p for p in err["loc"] if isinstance(p, (str, int)))
                msg = _quoted_scalar(str(err["type"]), err.get("input")) or str(err["msg"])
                msg = msg[:1].lower() + msg[1:]
                if err["type"] != "missing" and not msg.startswith("expected "):
                    msg = f"{msg} (got {_shown(err.get('input'))})"
                errors.append(FieldError(loc, f"{dotted(loc)}: {msg}", str(err["type"])))
                if err["type"] != "missing" and _delete(work, loc, copies):
                    progressed = True
            if not progressed:
                return None, errors
    return None, errors
