"""budgetlens.serialize.to_jsonable: one serialisation for every result type."""

from __future__ import annotations

import dataclasses
import enum
from pathlib import Path

import pytest
from pydantic import BaseModel

from budgetlens.serialize import to_jsonable


class Kind(str, enum.Enum):
    CUT = "cut"


@dataclasses.dataclass(frozen=True)
class Inner:
    kind: Kind
    where: Path


@dataclasses.dataclass(frozen=True)
class Outer:
    name: str
    items: tuple[Inner, ...]
    hidden: int = dataclasses.field(default=0, metadata={"json": False})
    renamed: float = dataclasses.field(default=0.5, metadata={"json": "ratio"})


class Model(BaseModel):
    window: int


def test_dataclasses_enums_paths_and_models_become_json_types() -> None:
    value = Outer("a", (Inner(Kind.CUT, Path("x/y.json")),), hidden=3)
    assert to_jsonable(value) == {"name": "a", "items": [{"kind": "cut", "where": "x/y.json"}],
                                  "ratio": 0.5}
    assert to_jsonable({"m": Model(window=8192), 1: {2}}) == {"m": {"window": 8192},
                                                                "1": [2]}
    assert to_jsonable(Kind.CUT) == "cut"


def test_an_unknown_type_is_an_error_not_a_string() -> None:
    with pytest.raises(TypeError, match="not JSON-serialisable: object"):
        to_jsonable(object())
