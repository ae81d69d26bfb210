"""``contract.frozen.quick_init``: the frozen dataclasses a check makes per step get an
``__init__`` that sets the instance's ``__dict__`` in one call; the instances are the same
(fields, defaults, factories, equality, hash, repr, replace, pickle, frozen) as the
dataclass's own ``__init__`` makes (compared with an undecorated twin)."""

from __future__ import annotations

import dataclasses
import pickle
from dataclasses import dataclass, field

import pytest

from budgetlens.contract.check import _Plan, _Shared
from budgetlens.contract.frozen import quick_init
from budgetlens.contract.limits import ModelLimits
from budgetlens.contract.pipeline import Chain, PipelineFile, Setting
from budgetlens.contract.results import PipelineReport, StepBudget, Term


@dataclass(frozen=True)
class Plain:
    a: int
    b: str = "x"
    c: list[int] = field(default_factory=list)
    d: tuple[int, ...] = ()


@quick_init
@dataclass(frozen=True)
class Quick:
    a: int
    b: str = "x"
    c: list[int] = field(default_factory=list)
    d: tuple[int, ...] = ()


def _same(quick: Quick, plain: Plain) -> None:
    assert dataclasses.astuple(quick) == dataclasses.astuple(plain)
    assert repr(quick).replace("Quick", "Plain") == repr(plain)


@pytest.mark.parametrize("args,kwargs", [((1,), {}), ((1, "y"), {}), ((1,), {"d": (2,)}),
                                         ((), {"a": 3, "c": [4]}), ((5, "z", [6], (7,)), {})])
def test_a_quick_instance_is_the_dataclass_instance(args: tuple[object, ...],
                                                    kwargs: dict[str, object]) -> None:
    quick, plain = Quick(*args, **kwargs), Plain(*args, **kwargs)  # type: ignore[arg-type]
    _same(quick, plain)
    assert quick == Quick(*args, **kwargs)  # type: ignore[arg-type]
    assert pickle.loads(pickle.dumps(quick)) == quick
    _same(dataclasses.replace(quick, b="r"), dataclasses.replace(plain, b="r"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        quick.a = 9  # type: ignore[misc]


def test_each_instance_gets_its_own_factory_value() -> None:
    first, second = Quick(1), Quick(2)
    assert first.c == [] and first.c is not second.c


def test_the_dataclass_errors_stay() -> None:
    with pytest.raises(TypeError):
        Quick()  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Quick(1, e=2)  # type: ignore[call-arg]
    assert hash(Quick(1, d=(1,)).d) == hash((1,))


def test_a_class_it_cannot_treat_is_refused_when_decorated() -> None:
    class NotFrozen:
        pass

    with pytest.raises(TypeError):
        quick_init(dataclass(NotFrozen))

    @dataclass(frozen=True)
    class Post:
        a: int

        def __post_init__(self) -> None:
            pass

    with pytest.raises(TypeError):
        quick_init(Post)

    @dataclass(frozen=True, kw_only=True)
    class KwOnly:
        a: int

    with pytest.raises(TypeError):
        quick_init(KwOnly)


@pytest.mark.parametrize("cls", [Term, StepBudget, PipelineReport, Setting, PipelineFile, Chain,
                                 ModelLimits,
                                 _Plan, _Shared])
def test_the_per_step_classes_set_their_fields_in_one_call(cls: type) -> None:
    init = cls.__init__  # type: ignore[misc]
    assert init.__code__.co_names == ("_set",) or set(init.__code__.co_names) <= {
        "_set", "_FACTORY"} | {f"_factory_{f.name}" for f in dataclasses.fields(cls)}
    assert init.__qualname__ == f"{cls.__qualname__}.__init__"


class _Descriptor:
    def __get__(self, obj: object, owner: type | None = None) -> int:
        return 20

    def __set__(self, obj: object, value: int) -> None:
        pass


def test_the_classes_whose_init_it_would_get_wrong_are_refused() -> None:
    """Found by review: each of these was accepted and then made wrong instances or failed
    at the first call."""

    @dataclass(frozen=True, init=False)
    class OwnInit:
        a: int

        def __init__(self, a: str) -> None:
            object.__setattr__(self, "a", int(a) * 2)

    @dataclass(frozen=True)
    class WithInitVar:
        a: int
        b: dataclasses.InitVar[int]

    @dataclass(frozen=True)
    class Underscore:
        _set: int

    @dataclass(frozen=True)
    class FactoryName:
        x: list[int] = field(default_factory=list)
        _factory_x: int = 0

    @dataclass(frozen=True)
    class DescriptorDefault:
        a: int = _Descriptor()  # type: ignore[assignment]

    for cls in (OwnInit, WithInitVar, Underscore, FactoryName, DescriptorDefault):
        with pytest.raises(TypeError, match="quick_init"):
            quick_init(cls)
    assert OwnInit("21").a == 42  # left as it was  # type: ignore[arg-type]


@pytest.mark.parametrize("cls", [Term, StepBudget, PipelineReport, Setting, PipelineFile, Chain,
                                 ModelLimits, _Plan, _Shared])
def test_the_per_step_classes_keep_the_dataclass_parameters(cls: type) -> None:
    """Same parameter names, order and defaults as the dataclass's own ``__init__``, which
    ``dataclasses.fields`` describes; an instance made with only the required fields has
    every field set."""
    import inspect

    params = list(inspect.signature(cls).parameters.values())
    fields = dataclasses.fields(cls)
    assert [p.name for p in params] == [f.name for f in fields]
    required: dict[str, object] = {}
    for p, f in zip(params, fields, strict=True):
        if f.default is not dataclasses.MISSING:
            assert p.default == f.default
        elif f.default_factory is dataclasses.MISSING:
            assert p.default is inspect.Parameter.empty
            required[f.name] = object()
    made = cls(**required)
    assert set(vars(made)) == {f.name for f in fields}
    for f in fields:
        if f.default_factory is not dataclasses.MISSING:
            assert getattr(made, f.name) == f.default_factory()
