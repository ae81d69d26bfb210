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


class Level(enum.IntEnum):
    HIGH = 3


def test_a_second_value_of_a_class_seen_before_comes_out_the_same() -> None:
    """The fields of a class are looked up once; the next value of it takes that record
    (and an enum that is also an int or a str still becomes its value)."""
    first = Outer("a", (Inner(Kind.CUT, Path("p")),))
    second = Outer("b", (Inner(Kind.CUT, Path("q")),), renamed=2.0)
    assert to_jsonable(first) == {"name": "a", "items": [{"kind": "cut", "where": "p"}],
                                  "ratio": 0.5}
    assert to_jsonable(second) == {"name": "b", "items": [{"kind": "cut", "where": "q"}],
                                   "ratio": 2.0}
    assert to_jsonable([Level.HIGH, True, None, 1.5]) == [3, True, None, 1.5]
    assert type(to_jsonable(Level.HIGH)) is int
