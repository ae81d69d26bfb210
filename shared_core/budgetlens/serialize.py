"""One way to turn result types into JSON-ready data (the ``--format json`` output, LSP data).

:func:`to_jsonable` walks frozen dataclasses (every field, by name), enums (their value),
pydantic models and the contract's shapes (``model_dump(mode="json")``), mappings, sequences
and paths. A dataclass may
leave fields out of its JSON with ``field(metadata={"json": False})``, or rename one with
``metadata={"json": "name"}``. Result types need no hand-written ``to_dict``.
"""

from __future__ import annotations

import dataclasses
import enum
import sys
from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

JSON_KEY = "json"
_NAMES: dict[type, tuple[tuple[str, str], ...]] = {}


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
        names = _NAMES.get(type(value))
        if names is None:  # once per class: (attribute, JSON name) of the fields kept
            names = _NAMES[type(value)] = tuple(
                (f.name, str(f.metadata.get(JSON_KEY, f.name))) for f in dataclasses.fields(value)
                if f.metadata.get(JSON_KEY, f.name) is not False)
        return {name: to_jsonable(getattr(value, attr)) for attr, name in names}
    if _is_model(value):
        return value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, PurePath):
        return str(value)
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


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
