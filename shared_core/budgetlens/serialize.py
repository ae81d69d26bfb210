"""One way to turn result types into JSON-ready data (the ``--format json`` output, LSP data).

:func:`to_jsonable` walks frozen dataclasses (every field, by name), enums (their value),
pydantic models and the contract's shapes (``model_dump(mode="json")``), mappings, sequences
and paths. A dataclass says how its JSON differs from its fields, and nothing more:

- ``field(metadata={JSON_KEY: False})`` leaves a field out; ``{JSON_KEY: "name"}`` renames it;
- ``{JSON_AS: f}`` writes ``f(value)`` instead of the value (``f`` may return :data:`OMIT` to
  leave the key out, e.g. an empty reason);
- a class attribute ``JSON_ORDER`` (a tuple of attribute names) lists the keys in order, and may
  name properties too (a value derived from the fields); ``...`` in it stands for every field
  it does not name, in field order; without ``...``, fields it does not name are left out.

Result types need no hand-written ``to_dict``.

:func:`dumps` writes JSON text as ``json.dumps(..., indent=2)`` does, and places a
:class:`RawJSON` (JSON text rendered earlier, e.g. kept by a result cache) as it is, indented to
where it stands. It is the one way to reuse rendered JSON: nobody splices JSON text by hand.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
from collections.abc import Callable, Mapping
from json.encoder import encode_basestring as _string  # json's own (C when built)
from pathlib import PurePath
from typing import Any

JSON_KEY = "json"
JSON_AS = "json_as"


class _Omit:
    def __repr__(self) -> str:
        return "OMIT"


OMIT: Any = _Omit()
"""What a ``JSON_AS`` function returns to leave its key out."""
#: (attribute, JSON name) of the fields of a dataclass written as they are, in field order.
_NAMES: dict[type, tuple[tuple[str, str], ...]] = {}
#: (attribute, JSON name, converter) of a dataclass with ``JSON_AS`` or ``JSON_ORDER``.
_PLANS: dict[type, tuple[tuple[str, str, Callable[[Any], Any] | None], ...]] = {}


#: The exact types that are JSON as they are (a subclass, e.g. an enum, takes the long way).
_PLAIN = frozenset({str, int, float, bool, type(None)})


def to_jsonable(value: Any) -> Any:
    """``value`` as JSON types (dict, list, str, int, float, bool, None)."""
    cls = type(value)
    if cls in _PLAIN:
        return value
    names = _NAMES.get(cls)
    if names is not None:  # a dataclass met before: the common case of a diagnostic's data
        return {name: to_jsonable(getattr(value, attr)) for attr, name in names}
    return _convert(value)


def _convert(value: Any) -> Any:
    """:func:`to_jsonable` of a value its fast paths did not take."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value.value if isinstance(value, enum.Enum) else value
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _dataclass(value)
    if _is_model(value):
        return value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, PurePath):
        return str(value)
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


def _dataclass(value: Any) -> dict[str, Any]:
    """:func:`to_jsonable` of a dataclass instance (its plan made once per class)."""
    cls = type(value)
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _plan(cls)
        plain = getattr(cls, "JSON_ORDER", None) is None
        if plain and all(convert is None for _, _, convert in plan):  # the fast path's kind
            names = _NAMES[cls] = tuple((attr, name) for attr, name, _ in plan)
            return {name: to_jsonable(getattr(value, attr)) for attr, name in names}
        _PLANS[cls] = plan
    out: dict[str, Any] = {}
    for attr, name, convert in plan:
        item = getattr(value, attr)
        if convert is not None:
            item = convert(item)
            if item is OMIT:
                continue
        out[name] = to_jsonable(item)
    return out


def _plan(cls: type) -> tuple[tuple[str, str, Callable[[Any], Any] | None], ...]:
    """(attribute, JSON name, converter) of each key of ``cls``'s JSON, in order."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    order = getattr(cls, "JSON_ORDER", None) or (...,)
    rest = [name for name in fields if name not in order]
    plan = []
    for attr in (name for item in order for name in (rest if item is ... else (item,))):
        metadata = fields[attr].metadata if attr in fields else {}
        name = metadata.get(JSON_KEY, attr)
        if name is not False:
            plan.append((attr, str(name), metadata.get(JSON_AS)))
    return tuple(plan)


#: The model classes ``to_jsonable`` dumps: pydantic's, and the contract's shapes (which dump
#: as their pydantic models do). Neither module is imported here (start-up speed, and the
#: contract is a layer above): a model exists only once its module is loaded.
_MODEL_CLASSES = (("pydantic", "BaseModel"), ("budgetlens.contract.shapes", "Shape"))


def _is_model(value: Any) -> bool:
    for module_name, class_name in _MODEL_CLASSES:
        module = sys.modules.get(module_name)
        if module is not None and isinstance(value, getattr(module, class_name)):
            return True
    return False


@dataclasses.dataclass(frozen=True)
class RawJSON:
    """JSON text rendered earlier with ``indent=2`` at the top level (``json.dumps(x,
    indent=2, ensure_ascii=False)``): :func:`dumps` writes it as that value, unparsed."""

    text: str


def dumps(value: Any) -> str:
    """``json.dumps(value, indent=2, ensure_ascii=False)``, where each :class:`RawJSON`
    stands for the value its text holds: the same bytes as dumping the parsed values.

    Why: ``json.dumps`` with ``indent`` runs in pure Python, and a value rendered once (a
    checked step, kept by the result cache) need not be encoded again. This walks the
    containers as ``json.dumps`` lays them out, and writes a RawJSON's text with each of its
    lines indented to where it stands; scalars are ``json.dumps``'s own."""
    out: list[str] = []
    _write(value, "\n", out)
    return "".join(out)


def _scalar(value: Any) -> str:
    """A scalar's JSON as ``json.dumps`` writes it (str, int, float, bool, None and their
    subclasses; a float that is not finite as ``NaN``/``Infinity``)."""
    if isinstance(value, str):
        return _string(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value in (_INF, -_INF):
            return "Infinity" if value > 0 else "-Infinity"
        return float.__repr__(value)
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


_INF = float("inf")


def _write(value: Any, newline: str, out: list[str]) -> None:
    """``value``'s JSON at the depth whose line break (with its indent) is ``newline``."""
    cls = type(value)
    if cls is str:  # the common leaves first, by exact type
        out.append(_string(value))
    elif cls is int:
        out.append(int.__repr__(value))
    elif cls is dict or isinstance(value, dict):
        if not value:
            out.append("{}")
            return
        inner, sep = newline + "  ", "{"
        for key, item in value.items():
            name = _string(key) if type(key) is str else _key(key)
            out.append(f"{sep}{inner}{name}: ")
            _write(item, inner, out)
            sep = ","
        out.append(newline + "}")
    elif cls is list or cls is tuple or isinstance(value, (list, tuple)):
        if not value:
            out.append("[]")
            return
        inner, sep = newline + "  ", "["
        for item in value:
            out.append(sep + inner)
            _write(item, inner, out)
            sep = ","
        out.append(newline + "]")
    elif cls is RawJSON:
        out.append(value.text.replace("\n", newline))
    else:
        out.append(_scalar(value))


def _key(key: object) -> str:
    """A dict key as ``json.dumps`` writes it (a non-string key becomes a string)."""
    if isinstance(key, str):
        return _string(key)
    if key is None or isinstance(key, (int, float)):  # bool is an int: "true"
        return _string(_scalar(key))
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(key).__name__}")
