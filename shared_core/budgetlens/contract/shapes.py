"""The shapes of the input files (config.json, pipeline files): declared once, read two ways.

A shape is a class whose fields are declared once, with ``text``, ``count``, ``flag``,
``nested``, ``texts`` or ``nested_list``: the kind of value, its bound, default, description
and aliases. From that one declaration come

- the **light instances** the check reads: slotted objects with the field values and the part
  of pydantic's model API the code uses (``model_extra``, ``model_fields_set``,
  ``model_dump``);
- a **pure-Python validator** (``Shape.light_validate``) that answers only for input pydantic
  certainly accepts: string keys, exact types (``type(v) is int``: a bool is not an integer,
  and a float, a subclass or anything unusual is left to pydantic), bounds met, a field
  written under one of its names only. For anything else it answers ``None``;
- the **pydantic model** (``Shape.pydantic()``, made with ``create_model`` on first use): the
  validation errors and their messages (``validation.validate_lenient`` falls back to it and
  converts its result, ``Shape.from_pydantic``) and the JSON Schema
  (``Shape.model_json_schema``).

So a valid file is checked without importing pydantic (start-up speed: importing it and
building the models is about a third of the server's own imports), and an invalid one gets
pydantic's errors exactly, as before. ``tests/core/contract/test_shapes.py`` compares the two
validators on generated documents.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

if TYPE_CHECKING:  # the models load with the first error or schema (start-up speed)
    from pydantic import BaseModel

S = TypeVar("S", bound="Shape")

STR, INT, BOOL, SHAPE, STRS, SHAPES = "str", "int", "bool", "shape", "list[str]", "list[shape]"


class _Bad:
    """What a field's check returns for a value it does not accept (``None`` is a value)."""


BAD: Any = _Bad()


class FieldSpec:
    """One field of a shape: its kind, bound, default, description and aliases.

    ``exact``, ``low`` and ``inclusive`` are what the light read checks inline for a string,
    boolean or integer field (``exact`` is ``None`` for the other kinds: ``check`` reads them).
    """

    __slots__ = ("aliases", "check", "default", "description", "exact", "ge", "gt",
                 "inclusive", "kind", "low", "name", "optional", "shape")

    def __init__(self, kind: str, description: str, *, default: Any = None,
                 gt: int | None = None, ge: int | None = None,
                 shape: type[Shape] | None = None, aliases: tuple[str, ...] = ()) -> None:
        self.kind = kind
        self.description = description
        self.default = default
        #: ``None`` is a value of the field (the fields without a default of their own)
        self.optional = default is None
        self.gt = gt
        self.ge = ge
        self.shape = shape
        self.aliases = aliases
        self.name = ""  # set by the shape's class
        self.exact: Any = {STR: str, BOOL: bool, INT: int}.get(kind)  # a type or None
        self.low: int | None = ge if ge is not None else gt
        self.inclusive = ge is not None
        self.check: Callable[[Any], Any] = _checker(self)


# ------------------------------------------------------------------------ declarations
def text(description: str, *, default: str | None = None,
         aliases: tuple[str, ...] = ()) -> Any:
    """A strict string (pydantic's ``StrictStr``)."""
    return FieldSpec(STR, description, default=default, aliases=aliases)


def count(description: str, *, gt: int | None = None, ge: int | None = None,
          default: int | None = None) -> Any:
    """A strict integer above ``gt`` or from ``ge`` on (a bool is not one)."""
    return FieldSpec(INT, description, default=default, gt=gt, ge=ge)


def flag(description: str, *, aliases: tuple[str, ...] = ()) -> Any:
    """A strict boolean."""
    return FieldSpec(BOOL, description, aliases=aliases)


def nested(shape: type[Shape], description: str) -> Any:
    """A mapping of another shape."""
    return FieldSpec(SHAPE, description, shape=shape)


def texts(description: str) -> Any:
    """A list of strict strings."""
    return FieldSpec(STRS, description)


def nested_list(shape: type[Shape], description: str) -> Any:
    """A list of mappings of another shape."""
    return FieldSpec(SHAPES, description, shape=shape)


# ----------------------------------------------------------------------- light checks
def _checker(spec: FieldSpec) -> Callable[[Any], Any]:
    """The light check of a field's value: the value to keep, or ``BAD``."""
    if spec.kind in (STR, BOOL):
        return _exact_checker(str if spec.kind == STR else bool, spec.optional)
    if spec.kind == INT:
        return _int_checker(spec)
    if spec.kind == STRS:
        return _strs_checker(spec.optional)
    return _shape_checker(spec, spec.optional)


def _exact_checker(exact: type, optional: bool) -> Callable[[Any], Any]:
    def check_exact(value: Any) -> Any:
        if type(value) is exact or (value is None and optional):
            return value
        return BAD
    return check_exact


def _int_checker(spec: FieldSpec) -> Callable[[Any], Any]:
    optional, low, inclusive = spec.optional, spec.low, spec.inclusive

    def check_int(value: Any) -> Any:
        if type(value) is int:
            if low is None or value > low or (inclusive and value == low):
                return value
            return BAD
        return value if value is None and optional else BAD
    return check_int


def _strs_checker(optional: bool) -> Callable[[Any], Any]:
    def check_strs(value: Any) -> Any:
        if type(value) is list and all(type(item) is str for item in value):
            return list(value)
        return value if value is None and optional else BAD
    return check_strs


def _shape_checker(spec: FieldSpec, optional: bool) -> Callable[[Any], Any]:
    many = spec.kind == SHAPES

    def check_shape(value: Any) -> Any:
        shape = spec.shape
        assert shape is not None
        if value is None:
            return value if optional else BAD
        if not many:
            made = shape.light_validate(value)
            return BAD if made is None else made
        if type(value) is not list:
            return BAD
        items = []
        for item in value:
            made = shape.light_validate(item)
            if made is None:
                return BAD
            items.append(made)
        return items
    return check_shape


# ---------------------------------------------------------------------------- shapes
class _ShapeMeta(type):
    """Collects a shape's ``FieldSpec`` attributes into ``FIELDS`` and the tables of the
    light read."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any],
                **kwargs: Any) -> _ShapeMeta:
        fields = {key: value for key, value in namespace.items()
                  if isinstance(value, FieldSpec)}
        for key in fields:
            del namespace[key]
        cls = super().__new__(mcs, name, bases, namespace, **kwargs)
        for key, spec in fields.items():
            spec.name = key
        by_key: dict[str, FieldSpec] = {}
        claimed: set[str] = set()
        populate = bool(namespace.get("PYDANTIC_CONFIG", {}).get("populate_by_name"))
        for spec in fields.values():
            claimed.update((spec.name, *spec.aliases))
            for key in (*spec.aliases, *([spec.name] if populate or not spec.aliases else [])):
                by_key[key] = spec
        tables = {"FIELDS": tuple(fields.values()),
                  "DEFAULTS": {spec.name: spec.default for spec in fields.values()},
                  "BY_KEY": by_key, "CLAIMED": frozenset(claimed),
                  "RENAMES": frozenset(k for k, spec in by_key.items() if k != spec.name),
                  "MODEL": None}
        for attribute, value in tables.items():
            setattr(cls, attribute, value)
        return cls


def _dump_any(value: Any) -> Any:
    """A kept (extra) value as pydantic's ``model_dump`` gives it: containers copied."""
    if type(value) is dict:
        return {key: _dump_any(item) for key, item in value.items()}
    if type(value) is list:
        return [_dump_any(item) for item in value]
    if isinstance(value, Shape):
        return value.model_dump()
    return value


class Shape(metaclass=_ShapeMeta):
    """The validated values of one mapping of an input file (see the module docstring).

    Unknown keys are kept (``model_extra``, as pydantic's ``extra="allow"``);
    ``model_fields_set`` holds the fields and kept keys the mapping wrote.
    """

    FIELDS: ClassVar[tuple[FieldSpec, ...]]
    DEFAULTS: ClassVar[dict[str, Any]]  # field name -> default
    BY_KEY: ClassVar[dict[str, FieldSpec]]  # every key a field is read from
    CLAIMED: ClassVar[frozenset[str]]  # field names and aliases
    RENAMES: ClassVar[frozenset[str]]  # the keys of BY_KEY that are not their field's name
    MODEL: ClassVar[type[BaseModel] | None]  # the pydantic model, once made
    #: More of the pydantic model's configuration (``extra="allow"`` is always there).
    PYDANTIC_CONFIG: ClassVar[dict[str, Any]] = {}

    model_extra: dict[str, Any]
    model_fields_set: set[str]

    # ------------------------------------------------------------------ validation
    @classmethod
    def light_validate(cls: type[S], data: Any) -> S | None:
        """The shape of ``data`` when pydantic certainly accepts it as it is, else ``None``
        (then pydantic decides). The values go straight into the instance's ``__dict__``
        (this runs for every step of every pipeline read)."""
        if type(data) is not dict:
            return None
        values = cls.DEFAULTS.copy()
        extra: dict[str, Any] = {}
        by_key, claimed = cls.BY_KEY, cls.CLAIMED
        for key, value in data.items():
            spec = by_key.get(key)
            if spec is None:
                if type(key) is not str or key in claimed:
                    return None
                extra[key] = value
            elif value is None:
                if not spec.optional:
                    return None
                values[spec.name] = None
            elif type(value) is spec.exact and (spec.low is None or value > spec.low
                                                or (spec.inclusive and value == spec.low)):
                values[spec.name] = value
            else:  # a nested shape or a list, or a wrong value (then ``BAD``)
                value = spec.check(value)
                if value is BAD:
                    return None
                values[spec.name] = value
        written = cls._written(data) if cls.RENAMES else set(data)
        if written is None:
            return None
        values["model_extra"] = extra
        values["model_fields_set"] = written
        obj = object.__new__(cls)
        obj.__dict__ = values
        return obj

    @classmethod
    def _written(cls, data: dict[str, Any]) -> set[str] | None:
        """The fields and kept keys ``data`` writes (``model_fields_set``); ``None`` when it
        writes one field under two of its names (pydantic keeps the second as an extra key:
        left to it)."""
        if cls.RENAMES.isdisjoint(data):
            return set(data)
        names = [cls.BY_KEY[key].name if key in cls.BY_KEY else key for key in data]
        written = set(names)
        return written if len(written) == len(names) else None

    @classmethod
    def from_pydantic(cls: type[S], model: BaseModel) -> S:
        """The light form of an instance of ``cls.pydantic()``."""
        values: dict[str, Any] = {}
        for spec in cls.FIELDS:
            value = getattr(model, spec.name)
            if value is not None and spec.shape is not None:
                value = (spec.shape.from_pydantic(value) if spec.kind == SHAPE
                         else [spec.shape.from_pydantic(item) for item in value])
            values[spec.name] = value
        values["model_extra"] = dict(model.model_extra or {})
        values["model_fields_set"] = set(model.model_fields_set)
        obj = object.__new__(cls)
        obj.__dict__ = values
        return obj

    @classmethod
    def model_validate(cls: type[S], data: Any) -> S:
        """Validate ``data`` as pydantic does (raising its ``ValidationError``)."""
        light = cls.light_validate(data)
        return light if light is not None else cls.from_pydantic(
            cls.pydantic().model_validate(data))

    @classmethod
    def pydantic(cls) -> type[BaseModel]:
        """The pydantic model of this shape (made on first use)."""
        if cls.MODEL is None:
            cls.MODEL = _make_model(cls)
        return cls.MODEL

    @classmethod
    def model_json_schema(cls, **kwargs: Any) -> dict[str, Any]:
        """The pydantic model's JSON Schema."""
        return cls.pydantic().model_json_schema(**kwargs)

    # --------------------------------------------------------------- model surface
    def model_dump(self, *, mode: str = "python", exclude_unset: bool = False
                   ) -> dict[str, Any]:
        """The values as a dict, as pydantic's ``model_dump`` (fields first, then the kept
        keys; ``mode="json"`` goes through the pydantic model)."""
        if mode != "python":
            model = self.pydantic().model_validate(self.model_dump(exclude_unset=True))
            return model.model_dump(mode=mode, exclude_unset=exclude_unset)
        out: dict[str, Any] = {}
        for spec in self.FIELDS:
            if exclude_unset and spec.name not in self.model_fields_set:
                continue
            value = getattr(self, spec.name)
            if isinstance(value, Shape):
                value = value.model_dump(exclude_unset=exclude_unset)
            elif type(value) is list:
                value = [item.model_dump(exclude_unset=exclude_unset)
                         if isinstance(item, Shape) else item for item in value]
            out[spec.name] = value
        for key, value in self.model_extra.items():
            out[key] = _dump_any(value)
        return out

    def _values(self) -> list[tuple[str, Any]]:
        return [*((spec.name, getattr(self, spec.name)) for spec in self.FIELDS),
                *self.model_extra.items()]

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        args = ", ".join(f"{key}={value!r}" for key, value in self._values())
        return f"{type(self).__name__}({args})"

    if not TYPE_CHECKING:  # as pydantic: a kept key reads as an attribute (not for mypy)
        def __getattr__(self, name: str) -> Any:
            if not name.startswith("__"):
                try:
                    extra = object.__getattribute__(self, "model_extra")
                except AttributeError:
                    extra = {}
                if name in extra:
                    return extra[name]
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


# -------------------------------------------------------------------- pydantic models
def pydantic_type(spec: FieldSpec) -> Any:
    """The pydantic annotation of a field (``StrictStr | None``, ``list[Step] | None``)."""
    from typing import Annotated, Optional

    from pydantic import Field  # start-up speed: only for errors and the schema

    base: Any
    if spec.kind == STR:
        base = Annotated[str, Field(strict=True)]
    elif spec.kind == BOOL:
        base = Annotated[bool, Field(strict=True)]
    elif spec.kind == INT:
        bound = {"gt": spec.gt} if spec.gt is not None else {"ge": spec.ge}
        base = Annotated[int, Field(strict=True, **bound)]
    elif spec.kind == STRS:
        base = list[Annotated[str, Field(strict=True)]]
    else:
        assert spec.shape is not None
        model = spec.shape.pydantic()
        base = model if spec.kind == SHAPE else list[model]  # type: ignore[valid-type]
    return Optional[base] if spec.optional else base  # noqa: UP045 - a runtime value


def _make_model(shape: type[Shape]) -> type[BaseModel]:
    from pydantic import AliasChoices, ConfigDict, Field, create_model  # see pydantic_type

    fields: dict[str, Any] = {}
    for spec in shape.FIELDS:
        extra: dict[str, Any] = {}
        if spec.aliases:
            extra["validation_alias"] = AliasChoices(*spec.aliases)
        fields[spec.name] = (pydantic_type(spec),
                             Field(spec.default, description=spec.description, **extra))
    config = ConfigDict(extra="allow", **shape.PYDANTIC_CONFIG)  # type: ignore[typeddict-item]
    model: type[BaseModel] = create_model(shape.__name__, __config__=config,
                                          __doc__=shape.__doc__, __module__=shape.__module__,
                                          **fields)
    return model


__all__ = ["BAD", "FieldSpec", "Shape", "count", "flag", "nested", "nested_list",
           "pydantic_type", "text", "texts"]
