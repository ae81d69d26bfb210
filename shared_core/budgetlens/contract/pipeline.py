"""Pipeline files: the shapes of a pipeline (``contract/shapes.py``), and its ``extends`` chain.

A pipeline file is YAML with ``extends`` (a parent pipeline, relative to this file),
``settings`` and ``steps``. Unknown keys are kept: pipelines carry other settings; a key
close to a known one is a typo and gets a warning (``key_diagnostics``, BL008).
Settings merge key by key along the chain, the child winning; a child with ``steps``
replaces its parent's steps, a child without inherits them.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from budgetlens import codes
from budgetlens.contract.frozen import quick_init
from budgetlens.contract.margin import DEFAULT_MARGIN_TOKENS
from budgetlens.contract.near_miss import (
    check_mapping,
    key_name_range,
    model_keys,
    near_miss_diagnostic,
    suggest,
    value_text_range,
)
from budgetlens.contract.shapes import Shape, count, flag, nested, nested_list, text
from budgetlens.contract.validation import validate_lenient
from budgetlens.files import FileSource, SourceError, is_inside
from budgetlens.source import FILE_START, Diagnostic, Location, Range, Related, Severity
from budgetlens.yamldoc.parse import YamlDocument, YamlPath, parse_yaml

DEFAULT_SAFETY_MARGIN_TOKENS = DEFAULT_MARGIN_TOKENS
#: Most files in an extends chain, the pipeline itself included.
MAX_EXTENDS_DEPTH = 32
CALL_MODEL = "call_model"


# Read without pydantic when valid; the pydantic models (errors, the JSON Schema) are made from
# these declarations on first use (contract/shapes.py).
class UserParts(Shape):
    """The user message of a step."""

    template: str | None = text(
        "User message template; placeholders are {identifier}, '{{' and '}}' are literal"
        " braces.")


class Step(Shape):
    """One step of a pipeline. Only ``type: call_model`` steps have a token budget."""

    id: str | None = text("The step's name (preferred).")
    name: str | None = text("The step's name when it has no id.")
    type: str | None = text("Step type; 'call_model' calls the model.")
    prompt_key: str | None = text("System prompt file: <prompts_dir>/<prompt_key>.txt.")
    user_parts: UserParts | None = nested(UserParts, "The user message of the step.")
    max_output_tokens: int | None = count(
        "Output limit of the step (wins over max_tokens).", gt=0)
    max_tokens: int | None = count(
        "Output limit of the step when max_output_tokens is not set.", gt=0)
    use_history: bool | None = flag(
        "Put the conversation history (up to max_history_tokens) in the prompt.")


class Settings(Shape):
    """Budget settings of a pipeline; merged key by key along the extends chain."""

    max_context_tokens: int | None = count(
        "Token limit of the retrieved context of every call_model step (required, here or in"
        " a parent).", gt=0)
    max_history_tokens: int | None = count(
        "Token limit of the history of a use_history step.", ge=0)
    budget_safety_margin_tokens: int | None = count(
        f"Tokens kept free in every step (default {DEFAULT_SAFETY_MARGIN_TOKENS}).", ge=0)
    min_context_tokens: int | None = count(
        "Lowest max_context_tokens the clamp may set (default: half of max_context_tokens);"
        " below it, output limits are lowered.", ge=0)
    min_output_tokens: int | None = count(
        "Lowest output limit the clamp may set for a step (default: half of the step's own"
        " limit); a step that cannot fit above its floors is an error.", ge=0)


class Pipeline(Shape):
    """A pipeline file. Unknown top-level keys are kept."""

    extends: str | None = text("Parent pipeline file, relative to this one.")
    settings: Settings | None = nested(Settings, "Budget settings.")
    steps: list[Step] | None = nested_list(
        Step, "The steps; when present they replace the parent's.")


def step_name(step: Step, index: int) -> str:
    """A step is named by its ``id``, else its ``name``, else ``#<index>`` (0-based)."""
    return step.id or step.name or f"#{index}"


@quick_init
@dataclass(frozen=True)
class PipelineFile:
    """One pipeline file as read and validated."""

    path: str
    doc: YamlDocument | None
    model: Pipeline | None
    diagnostics: tuple[Diagnostic, ...] = ()
    invalid: frozenset[YamlPath] = frozenset()

    @property
    def usable(self) -> bool:
        return self.model is not None and self.doc is not None

    @property
    def has_errors(self) -> bool:
        return any(d.severity is Severity.ERROR for d in self.diagnostics)

    def location(self, path: YamlPath) -> Location:
        """Where the value at ``path`` is (the file's start when it is not in the file); the
        range is computed when first read (``Location.lazy``)."""
        if self.doc is None:
            return Location(self.path, FILE_START)
        return Location.lazy(self.path, _value_range, self.doc, path)

    def key_location(self, path: YamlPath) -> Location:
        """Where the key of the entry at ``path`` is (else its value, else the file's
        start), computed when first read."""
        if self.doc is None:
            return Location(self.path, FILE_START)
        return Location.lazy(self.path, _key_range, self.doc, path)

    def head_range(self) -> Range:
        """The range of the first top-level key (where file-wide problems are shown)."""
        if self.doc is not None and isinstance(self.doc.value, dict):
            for key in self.doc.value:
                rng = self.doc.key_range((key,))
                if rng is not None:
                    return rng
        return Range.at(0, 0)


def _value_range(doc: YamlDocument, path: YamlPath) -> Range:
    return doc.value_range(path) or FILE_START


def _key_range(doc: YamlDocument, path: YamlPath) -> Range:
    return doc.key_range(path) or FILE_START


def _field_code(path: tuple[str | int, ...]) -> str:
    if path[:2] == ("settings", "max_context_tokens"):
        return codes.CONTEXT_INVALID
    return codes.INVALID_VALUE


def _step_of(value: dict[str, Any], path: YamlPath) -> str | None:
    """The name of the step ``path`` points into (``steps[3].max_output_tokens``), if any."""
    if len(path) < 2 or path[0] != "steps" or not isinstance(path[1], int):
        return None
    steps = value.get("steps")
    if not isinstance(steps, list) or not 0 <= path[1] < len(steps):
        return None
    step = steps[path[1]]
    if isinstance(step, dict):
        for key in ("id", "name"):
            if isinstance(step.get(key), str) and step[key]:
                return str(step[key])
    return f"#{path[1]}"


def load_pipeline_text(path: str, text: str) -> PipelineFile:
    """Parse and validate a pipeline file's text; every problem becomes a diagnostic."""
    doc, problems = parse_yaml(text)
    diags = [Diagnostic(path, p.range, Severity.ERROR if p.fatal else Severity.WARNING,
                        p.code, p.message) for p in problems]
    if doc is None:
        return PipelineFile(path, None, None, tuple(diags))
    if doc.value is None:
        diags.append(Diagnostic(path, Range.at(0, 0), Severity.ERROR, codes.PIPELINE_SHAPE,
                                "pipeline file is empty: expected a mapping with settings and"
                                " steps"))
        return PipelineFile(path, doc, None, tuple(diags))
    if not isinstance(doc.value, dict):
        diags.append(Diagnostic(path, doc.value_range(()) or Range.at(0, 0), Severity.ERROR,
                                codes.PIPELINE_SHAPE,
                                f"a pipeline file must be a mapping, not a"
                                f" {type(doc.value).__name__}"))
        return PipelineFile(path, doc, None, tuple(diags))
    margin = _margin_text(doc.value)
    model, errors = validate_lenient(Pipeline, doc.value if margin is None
                                     else _without_margin(doc.value))
    invalid: set[YamlPath] = set()
    for err in errors:
        where = err.path
        while where and doc.span(where) is None:
            where = where[:-1]
        rng = doc.value_range(where) or Range.at(0, 0)
        diags.append(Diagnostic(path, rng, Severity.ERROR, _field_code(err.path),
                                _value_message(doc, err.path, err.message),
                                step=_step_of(doc.value, err.path)))
        invalid.add(err.path)
    if model is None:  # pragma: no cover - every Pipeline field is optional
        model = Pipeline.model_validate({})
    if margin is not None and model.settings is not None:  # read as written (margin.py)
        model.settings.__dict__["budget_safety_margin_tokens"] = margin
        model.settings.model_fields_set.add("budget_safety_margin_tokens")
    diags.extend(key_diagnostics(path, doc))
    return PipelineFile(path, doc, model, tuple(diags), frozenset(invalid))


_MARGIN = "budget_safety_margin_tokens"


def _margin_text(value: dict[str, Any]) -> str | None:
    """``settings.budget_safety_margin_tokens`` when it is a text (``"2% + 128"``: a
    proportional margin, read and checked by ``contract.margin``); else ``None``."""
    settings = value.get("settings")
    margin = settings.get(_MARGIN) if isinstance(settings, dict) else None
    return margin if isinstance(margin, str) else None


def _without_margin(value: dict[str, Any]) -> dict[str, Any]:
    """The pipeline's data without its text margin, for the Settings shape (a count)."""
    settings = {k: v for k, v in value["settings"].items() if k != _MARGIN}
    return {**value, "settings": settings}


_REMOVE_QUOTES = " (remove the quotes)"


def _value_message(doc: YamlDocument, where: YamlPath, message: str) -> str:
    """``message`` of a value error, its hint corrected for digits with a leading zero: YAML
    1.1 reads an unquoted ``0777`` as the octal number 511 and an unquoted ``0990`` (not
    octal) as a string, so "remove the quotes" is wrong for both."""
    value = doc.node(where)
    span = doc.span(where)
    if not message.endswith(_REMOVE_QUOTES) or not isinstance(value, str) or span is None:
        return message
    text = value.strip()
    digits = text.lstrip("+-").replace("_", "")
    if len(digits) < 2 or digits[0] != "0" or not digits.isdigit():
        return message
    number = int(text.replace("_", ""))
    if span.style is None:  # plain: not octal, so a string
        hint = (f" (it is not quoted: YAML reads a number with a leading zero as octal, and"
                f" {text} is not octal, so it reads a string; write {number})")
    elif set(digits) <= set("01234567"):
        hint = (f" (write {number} without the quotes and the leading zero: unquoted, YAML"
                f" reads {text} as the octal number {int(text.replace('_', ''), 8)})")
    else:
        hint = f" (write {number}, without the quotes and the leading zero)"
    return message[:-len(_REMOVE_QUOTES)] + hint


#: ``settings.injection`` is read by pipeline_injection.py, not by the Settings model.
SETTINGS_EXTRA_KEYS = ("injection",)
#: A step's ``model`` (limits.step_limits) and its request terms (contract/terms.py) are read
#: by the check, not by the Step model; so are its own ``serving``, ``gateway`` and
#: ``variant`` (limits.step_terms) and its own context and history terms (step_plan.py).
STEP_EXTRA_KEYS = ("model", "tools", "response_schema", "reasoning")
STEP_TERM_KEYS = ("serving", "gateway", "variant", "use_context", "max_context_tokens",
                  "max_history_tokens")
#: The keys whose near miss is an error (BL008), as they set a budget term: every key of
#: the top level, settings and user_parts; of a step, all but its name and type.
_STEP_BUDGET_KEYS = frozenset({"prompt_key", "user_parts", "max_output_tokens", "max_tokens",
                               "use_history", "model", "tools", "response_schema",
                               "reasoning", *STEP_TERM_KEYS})
#: The keys of a step's own ``serving`` block (config.ServingLimits's).
_SERVING_KEYS = ("max_model_len", "num_ctx")
#: Providers' names of a thinking budget: flagged as near misses of ``reasoning`` (BL008,
#: an error: the term would count 0). ``response_format`` and ``functions`` are not: runners
#: use them for their own values (``response_format: json``).
PROVIDER_SPELLINGS = {"reasoning_tokens": "reasoning", "max_reasoning_tokens": "reasoning",
                      "thinking_budget": "reasoning", "thinkingBudget": "reasoning",
                      "budget_tokens": "reasoning"}
_NO_TYPE = " Without a type the step is not a call_model step and is left out of the budget"
_NOT_IN_BUDGET = " Until then the step is not a call_model step and is left out of the budget"


def _call_model_keys(path: str, doc: YamlDocument, base: YamlPath,
                     raw: dict[str, Any]) -> list[Diagnostic]:
    """Near-miss keys of a call_model step and of its user_parts. A mapping whose keys are
    all known has none (most steps): it is not looked at key by key."""
    out: list[Diagnostic] = []
    if not raw.keys() <= _step_keys():
        out += check_mapping(path, doc, base,
                             model_keys(Step, *STEP_EXTRA_KEYS, *STEP_TERM_KEYS),
                             budget=_STEP_BUDGET_KEYS)
        out += [near_miss_diagnostic(
            path, key, meant, key_name_range(doc, (*base, key)), blocked=meant in raw,
            budget=meant not in raw, extra=f" ({key} is a provider's name; budgetlens"
                                           f" reads {meant})")
            for key, meant in PROVIDER_SPELLINGS.items() if key in raw]
    serving = raw.get("serving")
    if isinstance(serving, dict) and not serving.keys() <= set(_SERVING_KEYS):
        out += check_mapping(path, doc, (*base, "serving"), _SERVING_KEYS,
                             budget=_SERVING_KEYS)
    parts = raw.get("user_parts")
    if isinstance(parts, dict) and not parts.keys() <= _known(UserParts):
        keys = model_keys(UserParts)
        out += check_mapping(path, doc, (*base, "user_parts"), keys, budget=keys)
    return out


@functools.lru_cache(maxsize=8)
def _known(model: type[Shape], *extra: str) -> frozenset[str]:
    return frozenset(model_keys(model, *extra))


@functools.lru_cache(maxsize=1)
def _step_keys() -> frozenset[str]:
    """A call_model step's known keys: ``_known`` of them, without hashing its twenty
    arguments for every step."""
    return _known(Step, *STEP_EXTRA_KEYS, *STEP_TERM_KEYS)


def key_diagnostics(path: str, doc: YamlDocument) -> list[Diagnostic]:
    """Near-miss keys (BL008) of the file, its settings and its call_model steps, a step
    type close to ``call_model`` (BL008), and duplicate step ids (BL044).

    Other unknown keys are allowed: pipelines carry keys of their runtime.
    """
    top, settings = model_keys(Pipeline), model_keys(Settings, *SETTINGS_EXTRA_KEYS)
    out = check_mapping(path, doc, (), top, budget=top)
    out += check_mapping(path, doc, ("settings",), settings, budget=settings)
    steps = doc.node(("steps",))
    if not isinstance(steps, list):
        return out
    seen: dict[str, YamlPath] = {}
    for i, raw in enumerate(steps):
        if not isinstance(raw, dict):
            continue
        base: YamlPath = ("steps", i)
        # the step's name as step_name() reads it: its id, else its name, else #<index>
        where = next(((*base, k) for k in ("id", "name")
                      if isinstance(raw.get(k), str) and raw[k]), None)
        value = str(raw[where[-1]]) if where is not None else f"#{i}"
        kind = raw.get("type")
        found: list[Diagnostic] = []
        if "type" not in raw:  # a step without a type: only a misspelled ``type`` is caught
            found += check_mapping(path, doc, base, ("type",), extra={"type": _NO_TYPE})
        elif kind == CALL_MODEL:
            found += _call_model_keys(path, doc, base, raw)
        elif isinstance(kind, str) and suggest(kind, (CALL_MODEL,)) is not None:
            diag = near_miss_diagnostic(path, kind, CALL_MODEL,
                                        value_text_range(doc, (*base, "type")))
            found.append(replace(diag, message=f"unknown step type {kind!r}: did you mean"
                                               f" {CALL_MODEL!r}?{_NOT_IN_BUDGET}"))
        out += [replace(d, step=value) for d in found]
        if where is None:
            continue
        first = seen.setdefault(value, where)
        if first == where:
            continue
        related = (Related(Location(path, doc.value_range(first) or Range.at(0, 0)),
                           f"steps[{first[1]}] has {first[-1]} {value!r}"),)
        out.append(Diagnostic(
            path, doc.value_range(where) or Range.at(0, 0), Severity.ERROR,
            codes.DUPLICATE_STEP_ID,
            f"duplicate step {where[-1]} {value!r}: steps[{first[1]}] has it too; give each"
            f" step its own (reports, clamps and fixes find a step by it)", step=value,
            related=related))
    return out


def read_pipeline(path: str, files: FileSource) -> PipelineFile:
    """Read and load ``path``; an unreadable file gives a file with a diagnostic."""
    try:
        text = files.read_text(Path(path))
    except SourceError as exc:
        return PipelineFile(path, None, None, (Diagnostic(
            path, Range.at(0, 0), Severity.ERROR, codes.PIPELINE_UNREADABLE,
            f"pipeline cannot be read: {exc}"),))
    return load_pipeline_text(path, text)


@quick_init
@dataclass(frozen=True)
class Chain:
    """A pipeline and its ancestors, child first, with the problems of the links."""

    files: tuple[PipelineFile, ...]
    diagnostics: tuple[Diagnostic, ...] = ()
    broken: bool = False
    dependencies: tuple[str, ...] = field(default=())  # every file read, missing ones too

    @property
    def pipeline(self) -> PipelineFile:
        return self.files[0]


def resolve_extends(child: str, value: str) -> str:
    return os.path.normpath(os.path.join(os.path.dirname(child), value))


def _named_inside(path: str, root: str,
                  abspath: Callable[[str], str] = os.path.abspath) -> bool:
    p, r = abspath(path), abspath(root)
    return p == r or p.startswith(r.rstrip(os.sep) + os.sep)


_Problem = tuple[str, str]  # a diagnostic's code and message


def _error_at(loc: Location, problem: _Problem) -> Diagnostic:
    return Diagnostic(loc.file, loc.range, Severity.ERROR, *problem)


def _extends_target(current: PipelineFile, extends: str, names: list[str], path: str,
                    root: str | None, inside: Callable[[str, str], bool] = is_inside,
                    abspath: Callable[[str], str] = os.path.abspath) -> str | _Problem:
    """The parent ``extends`` names (a path), or why it cannot be followed."""
    if not extends.strip():
        return (codes.EXTENDS_MISSING, "extends is empty: name the parent pipeline file"
                                       " (relative to this file), or remove the key")
    if "\x00" in extends:
        return codes.EXTENDS_MISSING, f"extends {extends!r}: the path contains a NUL byte"
    parent_path = resolve_extends(current.path, extends)
    if parent_path in names or abspath(parent_path) in map(abspath, names):
        start = names.index(parent_path) if parent_path in names else 0
        cycle = [*names[start:], parent_path]
        return codes.EXTENDS_CYCLE, "extends cycle: " + " -> ".join(cycle)
    if len(names) >= MAX_EXTENDS_DEPTH:
        return (codes.EXTENDS_CYCLE, f"extends chain longer than {MAX_EXTENDS_DEPTH} files"
                                     f" ({path} and its parents): shorten the chain")
    if root is not None and not inside(parent_path, root):
        return (codes.EXTENDS_OUTSIDE, f"extends {extends!r} resolves to {parent_path},"
                                       f" outside the workspace root {root}")
    return parent_path


def _unreadable_parent(parent: PipelineFile, parent_path: str, extends: str) -> _Problem | None:
    unreadable = [d for d in parent.diagnostics if d.code == codes.PIPELINE_UNREADABLE]
    if not unreadable:
        return None
    reason = unreadable[0].message.removeprefix("pipeline cannot be read: ")
    if "no such file" in reason:
        reason = f"parent pipeline {parent_path} does not exist"
    return codes.EXTENDS_MISSING, f"extends {extends!r}: {reason}"


def _broken_parent(parent: PipelineFile, parent_path: str,
                   ext_loc: Location) -> list[Diagnostic]:
    """An error at the child's ``extends`` when the parent has errors (its first one related)."""
    if parent.usable and not parent.has_errors:
        return []
    first_error = next((d for d in parent.diagnostics if d.severity is Severity.ERROR), None)
    related: tuple[Related, ...] = ()
    if first_error is not None:
        related = (Related(Location(first_error.file, first_error.range),
                           first_error.message),)
    return [Diagnostic(ext_loc.file, ext_loc.range, Severity.ERROR,
                       codes.EXTENDS_PARENT_BROKEN, f"parent pipeline {parent_path} has errors",
                       related=related)]


def _own_link_error(first: PipelineFile, path: str, diags: list[Diagnostic]) -> list[Diagnostic]:
    """The pipeline itself shows why its chain is broken, at its own extends value."""
    link_errors = [d for d in diags if d.code in _LINK_CODES]
    if not link_errors or link_errors[-1].file == path or first.model is None:
        return []
    last = link_errors[-1]
    loc = first.location(("extends",))
    return [Diagnostic(loc.file, loc.range, Severity.ERROR, last.code, last.message,
                       related=(Related(Location(last.file, last.range), last.message),))]


def load_chain(path: str, files: FileSource, *, root: str | None,
               load: Callable[[str], PipelineFile] | None = None,
               inside: Callable[[str, str], bool] = is_inside,
               abspath: Callable[[str], str] = os.path.abspath,
               outside: Callable[[str], None] | None = None) -> Chain:
    """Load ``path`` and follow ``extends`` up its chain.

    Errors are reported at the ``extends`` value of the child: a missing or unreadable
    parent, a cycle (naming the chain), a parent outside ``root``, a broken parent. A
    pipeline inside ``root`` as named whose real path (symlinks resolved) leaves it is not
    read at all (BL007, as the editor's workspace-rooted reads refuse it). ``inside`` is
    ``files.is_inside`` (a memo of the resolved paths, ``RunFiles.is_inside``) or the plain
    function; ``abspath`` is ``files.abspath`` (``RunFiles.abspath``, memoised) or the plain
    function. ``outside`` is told of each file left unread because it resolves outside
    ``root`` (the pipeline, or a parent: ``RecordingFiles.outside``, so no cache keeps the
    error once the file is relinked inside); such a parent is among the chain's
    ``dependencies``.
    """
    if root is not None and _named_inside(path, root, abspath) and not inside(path, root):
        _unread(path, outside)
        return Chain((PipelineFile(path, None, None, (Diagnostic(
            path, Range.at(0, 0), Severity.ERROR, codes.PIPELINE_UNREADABLE,
            f"pipeline cannot be read: {path}: resolves outside the workspace root {root}"),
        )),), (), False, (path,))
    loader = load or (lambda p: read_pipeline(p, files))
    first = current = loader(path)
    chain = [first]
    deps = [path]
    diags: list[Diagnostic] = []
    broken = False
    while current.usable and current.model is not None and current.model.extends is not None:
        ext_loc = current.location(("extends",))
        extends = current.model.extends
        target = _extends_target(current, extends, [f.path for f in chain], path, root,
                                 inside, abspath)
        if isinstance(target, tuple):
            if target[0] == codes.EXTENDS_OUTSIDE:  # not read, an input all the same
                deps.append(_unread(resolve_extends(current.path, extends), outside))
            diags.append(_error_at(ext_loc, target))
            broken = True
            break
        deps.append(target)
        parent = loader(target)
        problem = _unreadable_parent(parent, target, extends)
        if problem is not None:
            diags.append(_error_at(ext_loc, problem))
            broken = True
            break
        chain.append(parent)
        diags.extend(_broken_parent(parent, target, ext_loc))
        diags.extend(parent.diagnostics)
        if not parent.usable:
            broken = True
            break
        current = parent
    if broken:
        diags.extend(_own_link_error(first, path, diags))
    return Chain(tuple(chain), tuple(diags), broken, tuple(deps))


def _unread(path: str, outside: Callable[[str], None] | None) -> str:
    """``path``, told to ``outside`` if given: a file left unread (it resolves outside the
    workspace root) that is an input all the same."""
    if outside is not None:
        outside(path)
    return path


_LINK_CODES = (codes.EXTENDS_CYCLE, codes.EXTENDS_MISSING, codes.EXTENDS_OUTSIDE)


@quick_init
@dataclass(frozen=True)
class Setting:
    """A merged setting: its value and the file and range that set it."""

    value: Any
    location: Location
    key_location: Location
    depth: int  # 0 = the pipeline itself, 1 = its parent, ...


def merged_settings(chain: Chain,
                    parents: Callable[[PipelineFile, int], Sequence[tuple[str, Setting]]]
                    | None = None) -> dict[str, Setting]:
    """Settings merged key by key along the chain, the child winning; bad values skipped.
    ``parents`` gives the ``file_settings`` of a parent (depth 1 and up; a caller checking
    many pipelines that share parents memoises it), else they are made here."""
    out: dict[str, Setting] = {}
    for depth, pf in enumerate(chain.files):
        entries = parents(pf, depth) if depth and parents is not None \
            else file_settings(pf, depth)
        for key, setting in entries:
            if key not in out:
                out[key] = setting
    return out


def file_settings(pf: PipelineFile, depth: int) -> tuple[tuple[str, Setting], ...]:
    """The settings ``pf`` sets (at ``depth`` in a chain), in its order: an explicit null,
    the same as not setting the key, and a bad value are left out."""
    if pf.model is None or pf.model.settings is None:
        return ()
    values = pf.model.settings.model_dump(exclude_unset=True)
    return tuple((key, Setting(value, pf.location(("settings", key)),
                               pf.key_location(("settings", key)), depth))
                 for key, value in values.items()
                 if value is not None and ("settings", key) not in pf.invalid)


def steps_owner(chain: Chain) -> PipelineFile | None:
    """The file whose ``steps`` the pipeline runs: the nearest one in the chain that has any."""
    for pf in chain.files:
        if pf.model is not None and pf.model.steps is not None:
            return pf
        if pf.model is None:
            return None
    return None

