"""One way to turn result types into JSON-ready data (the ``--format json`` output, LSP data).

:func:`to_jsonable` walks frozen dataclasses (every field, by name), enums (their value),
pydantic models (``model_dump(mode="json")``), mappings, sequences and paths. A dataclass may
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


def to_jsonable(value: Any) -> Any:
    """``value`` as JSON types (dict, list, str, int, float, bool, None)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value.value if isinstance(value, enum.Enum) else value
    if isinstance(value, enum.Enum):
        return to_jsonable(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            name = f.metadata.get(JSON_KEY, f.name)
            if name is False:
                continue
            out[str(name)] = to_jsonable(getattr(value, f.name))
        return out
    # pydantic is not imported here (start-up speed): a model exists only once it is loaded
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, Mapping):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, PurePath):
        return str(value)
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")
