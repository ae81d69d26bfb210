"""A quicker ``__init__`` for the frozen dataclasses a check makes for every step of every
pipeline (terms, step budgets, reports, plans).

A frozen dataclass's generated ``__init__`` sets each field with ``object.__setattr__``, a
call per field (a step budget has 25); ``quick_init`` replaces it with one that sets the
instance's ``__dict__`` in one call, with the same parameters, defaults and default
factories. Everything else of the dataclass (equality, hashing, ``repr``, ``replace``,
pickling, the frozen ``__setattr__``) is untouched: those read the fields, not how they
were set. A class it cannot treat so is refused with ``TypeError`` when it is decorated,
never at a call: one with ``__post_init__``, ``__slots__``, ``InitVar`` pseudo-fields, its
own ``__init__`` (``init=False``), keyword-only or ``init=False`` fields, a field whose name
starts with an underscore or is ``self`` (they could shadow the generated code's names), or
a class attribute of a field's name that is a descriptor (the dataclass's ``__init__``
sets the field through it).
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, TypeVar

C = TypeVar("C", bound=type)


class _Factory:
    """The default of a parameter whose field has a ``default_factory``."""


_FACTORY = _Factory()


def _parameters(cls: type) -> list[str]:
    """The parameters of the dataclass's own ``__init__`` (an ``InitVar`` is one of them
    but no field), without ``self``."""
    code = cls.__init__.__code__  # type: ignore[misc]
    return list(code.co_varnames[1 : code.co_argcount + code.co_kwonlyargcount])


def quick_init(cls: C) -> C:
    """Give the frozen dataclass ``cls`` an ``__init__`` that sets its ``__dict__`` at once
    (see the module)."""
    params = getattr(cls, "__dataclass_params__", None)
    if (
        params is None
        or not params.frozen
        or not params.init
        or "__slots__" in cls.__dict__
        or hasattr(cls, "__post_init__")
        or _parameters(cls) != [f.name for f in dataclasses.fields(cls)]
    ):
        raise TypeError(f"quick_init: {cls.__name__} is not a plain frozen dataclass")
    names: list[str] = []
    signature: list[str] = []
    before: list[str] = []
    scope: dict[str, Any] = {"_set": object.__setattr__, "_FACTORY": _FACTORY}
    for f in dataclasses.fields(cls):
        if (
            not f.init
            or f.kw_only
            or f.name.startswith("_")
            or f.name == "self"
            or hasattr(type(inspect.getattr_static(cls, f.name, None)), "__get__")
        ):
            raise TypeError(f"quick_init: {cls.__name__}.{f.name} is not a plain field")
        names.append(f.name)
        if f.default is not dataclasses.MISSING:
            scope[f"_default_{f.name}"] = f.default
            signature.append(f"{f.name}=_default_{f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            scope[f"_factory_{f.name}"] = f.default_factory
            signature.append(f"{f.name}=_FACTORY")
            before.append(f"    if {f.name} is _FACTORY:\n"
                          f"        {f.name} = _factory_{f.name}()\n")
        else:
            signature.append(f.name)
    values = ", ".join(f"{name!r}: {name}" for name in names)
    source = (f"def __init__(self, {', '.join(signature)}):\n{''.join(before)}"
              f"    _set(self, '__dict__', {{{values}}})\n")
    exec(source, scope)
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    setattr(cls, "__init__", init)  # noqa: B010 - a class attribute set as any other
    return cls
