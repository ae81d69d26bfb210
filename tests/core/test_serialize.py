"""budgetlens.serialize: one serialisation for every result type (to_jsonable, dumps)."""

from __future__ import annotations

import dataclasses
import enum
import json
from pathlib import Path
from typing import ClassVar

import pytest
from pydantic import BaseModel

from budgetlens.serialize import JSON_AS, JSON_KEY, OMIT, RawJSON, dumps, to_jsonable


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


@dataclasses.dataclass(frozen=True)
class Shaped:
    """A JSON unlike the fields: keys reordered, a property added, a value converted, an empty
    value left out, a field renamed through its converter, a field not listed."""

    score: float = dataclasses.field(metadata={JSON_AS: lambda s: round(s, 2)})
    why: str = dataclasses.field(metadata={JSON_AS: lambda why: why or OMIT})
    inner: Inner | None = dataclasses.field(metadata={JSON_KEY: "kind", JSON_AS: lambda i:
                                                      i.kind if i else None})
    scratch: int = 0

    JSON_ORDER: ClassVar = ("total", "inner", "why", "score")

    @property
    def total(self) -> float:
        return self.score * 2


def test_json_order_properties_converters_and_omitted_keys() -> None:
    full = Shaped(0.123456, "because", Inner(Kind.CUT, Path("p")), scratch=9)
    assert json.dumps(to_jsonable(full)) == (
        '{"total": 0.246912, "kind": "cut", "why": "because", "score": 0.12}')
    empty = Shaped(1.0, "", None)
    assert json.dumps(to_jsonable(empty)) == '{"total": 2.0, "kind": null, "score": 1.0}'


@dataclasses.dataclass(frozen=True)
class Extended:
    """Every field in order (``...``), then a property."""

    a: int
    b: int = dataclasses.field(default=2, metadata={JSON_KEY: False})
    c: int = 3

    JSON_ORDER: ClassVar = ("c", ..., "sum")

    @property
    def sum(self) -> int:
        return self.a + self.b + self.c


def test_an_ellipsis_in_json_order_stands_for_the_other_fields() -> None:
    assert json.dumps(to_jsonable(Extended(1))) == '{"c": 3, "a": 1, "sum": 6}'


# ------------------------------------------------------------------ one path to JSON
HAND_WRITTEN = ("to_dict",)


def _hand_written_serialisers(text: str) -> list[str]:
    """``Class.method`` of every method named in ``HAND_WRITTEN`` in ``text``."""
    import ast

    return [f"{cls.name}.{node.name}" for cls in ast.walk(ast.parse(text))
            if isinstance(cls, ast.ClassDef) for node in cls.body
            if isinstance(node, ast.FunctionDef) and node.name in HAND_WRITTEN]


def test_the_hand_written_serialiser_rule_itself() -> None:
    assert _hand_written_serialisers(
        "class A:\n    def to_dict(self):\n        return {}\n"
        "    def other(self):\n        pass\ndef to_dict(x):\n    pass\n") == ["A.to_dict"]


def test_no_core_type_has_a_hand_written_to_dict() -> None:
    # every result type becomes JSON through to_jsonable: a to_dict beside it is a second path
    core = Path(__file__).resolve().parents[2] / "shared_core" / "budgetlens"
    found = [f"{path.relative_to(core)}: {name}" for path in sorted(core.rglob("*.py"))
             for name in _hand_written_serialisers(path.read_text("utf-8"))]
    assert found == []


def _raw(value: object) -> RawJSON:
    return RawJSON(json.dumps(value, indent=2, ensure_ascii=False))


STEP = {"step": "zażółć", "terms": {"fixed": {"value": 12, "source": "≈ line\n2"}},
        "list": [1, [], {}, [2, {"a": None}]]}


@pytest.mark.parametrize("document", [
    {"version": 1, "steps": [STEP, STEP]},       # list items, two levels deep
    {"a": {"b": {"c": STEP}}, "d": [[STEP]]},    # dict values and nested lists
    STEP,                                        # the whole document
    [STEP, "text", 3, {"inner": [STEP]}],
    {"empty": [], "steps": []},                  # nothing to place
    {1: 2.5, None: True, False: None, 2.5: (), "k": Kind.CUT, "n": float("nan"),
     "t": (1, "a\n\"b\"", {}), "inf": float("-inf"), "big": 10**20},  # json's own rules
    "plain text", 3, None,
])
def test_dumps_places_raw_json_as_the_value_it_holds(document: object) -> None:
    def raw(value: object) -> object:  # every STEP replaced by its rendered text
        if value is STEP:
            return _raw(STEP)
        if isinstance(value, dict):
            return {k: raw(v) for k, v in value.items()}
        if isinstance(value, list):
            return [raw(v) for v in value]
        return value
    assert dumps(raw(document)) == json.dumps(document, indent=2, ensure_ascii=False)


def test_dumps_refuses_what_json_cannot_write() -> None:
    with pytest.raises(TypeError, match="not JSON-serialisable: object"):
        dumps({"x": object()})
    with pytest.raises(TypeError, match="keys must be str"):
        dumps({(1, 2): 0})
