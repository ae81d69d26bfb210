"""Templates rendered by their own languages' libraries, with every variable empty.

The fixed text of a message is its template rendered with each variable empty and each
block body once. The context is ``Blank``: a value that prints as ``MARK`` (removed from
the text once it is cut into messages), is true in ``if`` tests, and holds one item when
iterated (``each`` / ``for`` / mustache sections run their body once). Every key and
attribute of it is another ``Blank`` (nested up to ``_DEPTH`` levels, then ``MARK``).
The same object serves the three libraries: Jinja2 (Prompty's default, rendered in
Jinja2's sandbox as Prompty does), chevron (mustache: Prompty's ``mustache`` format
and the generic mapping's templates) and ``dotpromptz_handlebars`` (Handlebars: the
engine of Dotprompt's own Python runtime; Apache-2.0, where pybars3 is LGPL).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import chevron
from chevron.tokenizer import tokenize
from jinja2 import DictLoader, Environment, meta
from jinja2.exceptions import TemplateSyntaxError
from jinja2.sandbox import ImmutableSandboxedEnvironment

_DEPTH = 4
#: What a ``Blank`` prints while a template renders: a message whose text is all
#: variables still exists, as it does at run time (a role line followed by an empty
#: value makes no message in Prompty or Dotprompt); ``fixed`` removes it afterwards.
MARK = "\x00"


def fixed(text: str) -> str:
    """A rendered text with every empty variable's mark removed."""
    return text.replace(MARK, "")

_JINJA_MARKS = frozenset({"unsafe_callable", "alters_data"})
_KEYWORDS = frozenset({
    "loop", "true", "false", "none", "True", "False", "None", "range", "dict", "lipsum",
    "cycler", "joiner", "namespace", "self", "super", "varargs", "kwargs", "caller",
})


class Blank(Mapping[Any, Any], Sequence[Any]):
    """An empty variable that still enters every block once (see the module's doc)."""

    __slots__ = ("_depth",)

    def __init__(self, depth: int = 0) -> None:
        self._depth = depth

    def _child(self) -> Any:
        return Blank(self._depth + 1) if self._depth < _DEPTH else MARK

    def __getitem__(self, key: Any) -> Any:
        return self._child()

    def __getattr__(self, name: str) -> Any:
        # dunders, and the marks Jinja's sandbox and calls look for on a callable
        if name.startswith(("__", "jinja_")) or name in _JINJA_MARKS:
            raise AttributeError(name)
        return self._child()

    def __contains__(self, key: object) -> bool:
        return True

    def __iter__(self) -> Iterator[Any]:
        yield self._child()

    def __len__(self) -> int:
        return 1

    def __bool__(self) -> bool:
        return True

    def __str__(self) -> str:
        return MARK

    def __repr__(self) -> str:
        return MARK

    def __format__(self, spec: str) -> str:
        return MARK

    def __html__(self) -> str:
        return MARK

    def __eq__(self, other: object) -> bool:
        return other is self

    def __hash__(self) -> int:
        return id(self)


class BlankInputs(dict[str, Any]):
    """A context where every name is ``Blank``, except the ``given`` ones."""

    def __init__(self, given: Mapping[str, Any] | None = None) -> None:
        super().__init__(given or {})

    def __missing__(self, key: str) -> Any:
        return Blank()

    def __contains__(self, key: object) -> bool:
        return True


# ---------------------------------------------------------------- Jinja2 (Prompty)


class _BoundBlank(Blank):
    """A method of a ``Blank`` read as an attribute (``{{ doc.items }}``): prints as an
    empty value, and calls the method when called (``{% for k, v in d.items() %}``)."""

    __slots__ = ("_method",)

    def __init__(self, depth: int, method: Any) -> None:
        super().__init__(depth)
        self._method = method

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._method(*args, **kwargs)


class _BlankSandbox(ImmutableSandboxedEnvironment):
    """Prompty's sandbox, where a field of a ``Blank`` named like one of its methods
    (``items``, ``keys``, ``values``, ``get``, ``index``, ``count``) is still a field."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, Blank) and not attribute.startswith("_"):
            method = getattr(obj, attribute, None)
            if callable(method):
                return _BoundBlank(obj._depth + 1, method)
            return obj[attribute]
        return super().getattr(obj, attribute)


#: Most items a ``range(...)`` gives while a template renders with empty variables: a
#: file's ``{% for i in range(100000) %}{% for j in range(100000) %}`` would otherwise hold
#: the check for hours (the sandbox caps one range at 100,000, not their product).
MAX_RANGE = 1000


def _capped_range(*args: int) -> range:
    whole = range(*args)
    return whole[:MAX_RANGE]


def _dumps(value: Any, **kwargs: Any) -> str:
    """``tojson`` of a ``Blank``: the JSON of an empty string."""
    return json.dumps(value, default=_blank_json, **kwargs)


def _blank_json(value: Any) -> str:
    if isinstance(value, Blank):
        return ""
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def render_jinja(template: str, inputs: Mapping[str, Any] | None,
                 plain: Mapping[str, Any] | None = None) -> str:
    """``template`` rendered as Prompty renders it (Jinja2's immutable sandbox, trailing
    newline kept); with ``inputs`` ``None`` every variable is ``Blank`` but those
    ``plain`` gives."""
    names = jinja_variables(template)
    if inputs is not None:  # concrete inputs: exactly Prompty's environment
        env = ImmutableSandboxedEnvironment(loader=DictLoader({"prompt": template}),
                                            keep_trailing_newline=True)
        return env.get_template("prompt").render(**dict(inputs))
    env = _BlankSandbox(loader=DictLoader({"prompt": template}), keep_trailing_newline=True)
    env.policies["json.dumps_function"] = _dumps
    env.globals["range"] = _capped_range
    context: dict[str, Any] = {name: Blank() for name in names}
    context.update(plain or {})
    return env.get_template("prompt").render(**context)


def jinja_variables(template: str) -> list[str]:
    """The names a Jinja2 template reads from its context, in order of first use (names
    bound by ``for`` / ``set`` and Jinja's globals left out)."""
    return list(_jinja_variables(template))


@functools.lru_cache(maxsize=16)
def _jinja_variables(template: str) -> tuple[str, ...]:
    """``jinja_variables``, remembered: a Prompty body is rendered and read for its names,
    and parsing it twice was a quarter of reading a Prompty file."""
    env = Environment()
    undeclared = meta.find_undeclared_variables(env.parse(template))
    return tuple(name for name in _jinja_names(template) if name in undeclared)


def _jinja_names(template: str) -> list[str]:
    """Names read in ``template`` (it need not parse: a segment of a template is lexed
    only), in order, each once; an attribute (``a.b``) counts as its first name."""
    names: list[str] = []
    previous = ""
    try:
        for _, kind, value in Environment().lex(template):
            if kind == "name" and previous != "dot" and value not in _KEYWORDS \
                    and value not in names:
                names.append(value)
            if kind not in ("whitespace",):
                previous = "dot" if kind == "operator" and value == "." else kind
    except TemplateSyntaxError:
        return names
    return names


def jinja_segment_variables(segment: str, known: Sequence[str]) -> list[str]:
    """The names of ``known`` that ``segment`` (a part of a template) reads."""
    return [name for name in _jinja_names(segment) if name in known]


# ---------------------------------------------------------------- mustache (chevron)


def render_mustache(template: str, inputs: Mapping[str, Any] | None,
                    plain: Mapping[str, Any] | None = None) -> str:
    """``template`` rendered by chevron (as Prompty's ``mustache`` format does); with
    ``inputs`` ``None`` every variable is ``Blank`` but those ``plain`` gives."""
    data: Any = BlankInputs(plain) if inputs is None else dict(inputs)
    return str(chevron.render(template, data))


def mustache_variables(template: str) -> list[str]:
    """The names a mustache template reads (first path segment), in order, each once."""
    names: list[str] = []
    try:
        tokens = list(tokenize(template))
    except Exception:  # chevron raises a bare ChevronError on an unclosed tag
        tokens = [("variable", m) for m in _MUSTACHE_TAG.findall(template)]
    for kind, key in tokens:
        if kind in ("variable", "no escape", "section", "inverted section") and key != ".":
            first = key.strip().split(".")[0]
            if first and first not in names:
                names.append(first)
    return names


_MUSTACHE_TAG = re.compile(r"\{\{[{&#^]?\s*([\w.-]+)\s*\}?\}\}")


# ------------------------------------------------- GitHub Models' placeholders


#: The placeholder GitHub's runners replace (actions/ai-inference: ``/\{\{([\w.-]+)\}\}/``;
#: gh models replaces ``{{key}}`` for each key given): no sections, no spaces, no escaping.
PLACEHOLDER = re.compile(r"\{\{([\w.-]+)\}\}")


def render_placeholders(template: str, inputs: Mapping[str, Any] | None) -> str:
    """``template`` with each ``{{name}}`` replaced as GitHub's runners replace it (a name
    not given stays as written; with ``inputs`` ``None`` every name is empty)."""

    def value(match: re.Match[str]) -> str:
        if inputs is None:
            return ""
        if match.group(1) not in inputs:
            return match.group(0)
        return _plain_text(inputs[match.group(1)])

    return PLACEHOLDER.sub(value, template)


def placeholder_variables(template: str) -> list[str]:
    names: list[str] = []
    for name in PLACEHOLDER.findall(template):
        if name not in names:
            names.append(name)
    return names


def _plain_text(value: Any) -> str:
    """A value as Go's ``fmt.Sprintf("%v")`` / JavaScript's ``String`` print a scalar."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
