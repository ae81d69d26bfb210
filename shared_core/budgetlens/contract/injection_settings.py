"""The ``settings.injection`` block of a pipeline: its policy, checks, and each step's split.

A pipeline may hold the unified injection policy (``UnifiedContextBudgetPolicy``) in
``settings.injection``; keys merge along the ``extends`` chain one by one, the child winning.
``check_injection(report, files=...)`` runs on a ``PipelineReport`` from ``check_pipeline``:

- it validates every block of the chain, with diagnostics at the offending key or value
  (codes BL100-BL105, below);
- for every ``call_model`` step it computes the split the policy implies when a request has
  both knowledge cards and bucket content, with the step's fixed + history tokens as the
  tokens used before injection (and the split when a bucket is the direct target), e.g.
  ``injection 1,640: cards 656 · buckets 984``.

Without a ``settings.injection`` block anywhere in the chain, it reports nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from budgetlens.codes import (
    CODES,
    INJECTION_INVALID_VALUE,
    INJECTION_MIN_ABOVE_MAX,
    INJECTION_MINS_ABOVE_MAX,
    INJECTION_NOT_MAPPING,
    INJECTION_SHARES_NOT_ONE,
    INJECTION_UNKNOWN_KEY,
    Code,
)
from budgetlens.contract.near_miss import suggest
from budgetlens.contract.pipeline import PipelineFile, load_pipeline_text, read_pipeline
from budgetlens.contract.results import (
    InjectionCheck,
    PipelineReport,
    StepInjection,
    injection_label,
)
from budgetlens.files import FileSource
from budgetlens.source import Diagnostic, Location, Related, Severity

if TYPE_CHECKING:
    from budgetlens.assembly.unified_budget import PolicyValues, UnifiedBudget

# ``budgetlens.assembly.unified_budget`` (the arithmetic) is imported inside the functions
# below, only once a chain has a ``settings.injection`` block: most pipelines have none. The
# policy model (``UnifiedContextBudgetPolicy``, pydantic) loads only for a value the light
# read below does not take, for pydantic's own message (start-up speed, no cycle).

INJECTION_KEY = "injection"

INJECTION_CODES: dict[str, Code] = {code: info for code, info in CODES.items()
                                    if code.startswith("BL1")}


#: The policy's keys as its model describes them in the committed JSON Schema (``$defs``
#: entry ``json_schema.INJECTION_DEF``; tests/core/contract/test_json_schema.py keeps the file
#: equal to what the model gives): type, bounds, constant and default, read without pydantic.
SCHEMA_FILE = Path(__file__).with_name("pipeline.schema.json")
_POLICY_DEF = "InjectionPolicy"
_BAD: Any = object()
#: The keywords of a key's schema the light read understands; a key with others is left to
#: the model.
_KNOWN_KEYWORDS = frozenset({"type", "minimum", "maximum", "const", "default", "description",
                             "title"})


@functools.lru_cache(maxsize=1)
def policy_keys() -> dict[str, dict[str, Any]]:
    """Each policy key's JSON Schema, in the model's order."""
    schema = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return dict(schema["$defs"][_POLICY_DEF]["properties"])


def light_value(key: str, value: Any) -> Any:
    """``value`` as the policy model keeps it, when the model certainly accepts it (an exact
    ``int`` or ``float`` within the bounds, the constant itself); else ``_BAD``."""
    prop = policy_keys().get(key)
    if prop is None or not prop.keys() <= _KNOWN_KEYWORDS:
        return _BAD
    if "const" in prop:
        return value if type(value) is int and value == prop["const"] else _BAD
    low, high = prop.get("minimum"), prop.get("maximum")
    if type(value) is float and prop.get("type") == "number":
        number: float = value
    elif type(value) is int and prop.get("type") == "integer":
        number = value
    elif type(value) is int and prop.get("type") == "number" and low is not None \
            and high is not None and low <= value <= high:
        number = float(value)  # as the model's strict float keeps a small integer
    else:
        return _BAD
    if (low is not None and not number >= low) or (high is not None and not number <= high):
        return _BAD
    return number


_MADE: dict[str, type] = {}


def _policy_class() -> type:
    """The light policy: a frozen dataclass of every key, with the model's defaults (it
    serialises, compares and prints as a dataclass; ``to_jsonable`` gives the model's JSON).
    Made once: two threads that make it at once keep the first one made."""
    made = _MADE.get("class")
    if made is not None:
        return made
    fields = [(name, Any, dataclasses.field(default=prop.get("default", prop.get("const"))))
              for name, prop in policy_keys().items()]
    cls = dataclasses.make_dataclass("InjectionPolicyValues", fields, frozen=True)
    cls.__module__ = __name__
    cls.__doc__ = ("The merged ``settings.injection`` policy (the values of a"
                   " ``UnifiedContextBudgetPolicy``, read without pydantic).")
    return _MADE.setdefault("class", cls)


def __getattr__(name: str) -> Any:
    if name == "InjectionPolicyValues":  # made on first use (pickle finds it here)
        return _policy_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def merged_policy(values: Mapping[str, Any]) -> PolicyValues:
    """The policy of the merged valid keys: read without pydantic when the light read takes
    every value, else validated by the model (whose values are kept)."""
    light = {key: light_value(key, value) for key, value in values.items()}
    if any(v is _BAD for v in light.values()):
        from budgetlens.assembly.unified_budget import UnifiedContextBudgetPolicy  # see the top

        model = UnifiedContextBudgetPolicy.model_validate(dict(values))
        light = {name: getattr(model, name) for name in policy_keys()}
    made: PolicyValues = _policy_class()(**light)
    return made


def _field_problem(key: str, value: Any) -> str | None:
    if light_value(key, value) is not _BAD:
        return None
    from pydantic import ValidationError  # as the policy below

    from budgetlens.assembly.unified_budget import UnifiedContextBudgetPolicy  # see the top

    try:
        UnifiedContextBudgetPolicy.model_validate({key: value})
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        msg = str(err["msg"])
        return f"{msg[:1].lower()}{msg[1:]} (got {value!r})"
    return None


@dataclass(frozen=True)
class _Value:
    value: Any
    location: Location


def _diag(loc: Location, severity: Severity, code: str, message: str, pipeline: str,
          related: tuple[Related, ...] = ()) -> Diagnostic:
    return Diagnostic(loc.file, loc.range, severity, code, message, pipeline=pipeline,
                      related=related)


_BLOCK: tuple[str, str] = ("settings", INJECTION_KEY)


def _injection_block(pf: PipelineFile) -> Any:
    """The ``settings.injection`` value of a file (``None`` without one)."""
    if pf.doc is None or not isinstance(pf.doc.value, dict):
        return None
    settings = pf.doc.value.get("settings")
    if not isinstance(settings, dict):
        return None
    return settings.get(INJECTION_KEY)


def _block_values(pf: PipelineFile, block: dict[Any, Any], pipeline: str,
                  merged: dict[str, _Value], diags: list[Diagnostic]) -> None:
    """Add the valid keys of one mapping block to ``merged`` (a child's win), the invalid
    ones to ``diags``."""
    fields = tuple(policy_keys())  # the model's POLICY_FIELDS

    for key, value in block.items():
        key_text = str(key)
        if key_text not in fields:
            meant = suggest(key_text, fields)
            hint = f"did you mean {meant!r}?" if meant else f"known keys: {', '.join(fields)}"
            diags.append(_diag(pf.key_location((*_BLOCK, key)), Severity.ERROR,
                               INJECTION_UNKNOWN_KEY,
                               f"settings.injection: unknown key {key_text!r}; {hint}",
                               pipeline))
            continue
        problem = _field_problem(key_text, value)
        if problem is not None:
            diags.append(_diag(pf.location((*_BLOCK, key)), Severity.ERROR,
                               INJECTION_INVALID_VALUE,
                               f"settings.injection.{key_text}: {problem}", pipeline))
            continue
        merged.setdefault(key_text, _Value(value, pf.location((*_BLOCK, key))))


def merged_injection(files: Sequence[PipelineFile], *, pipeline: str
                     ) -> tuple[dict[str, _Value], Location | None, list[Diagnostic]]:
    """The valid keys of every ``settings.injection`` block of a chain (child first)."""
    merged: dict[str, _Value] = {}
    diags: list[Diagnostic] = []
    first: Location | None = None
    for pf in files:
        block = _injection_block(pf)
        if block is None:
            continue
        if first is None:
            first = pf.key_location(_BLOCK)
        if isinstance(block, dict):
            _block_values(pf, block, pipeline, merged, diags)
        else:
            diags.append(_diag(pf.location(_BLOCK), Severity.ERROR, INJECTION_NOT_MAPPING,
                               f"settings.injection must be a mapping of policy keys, not"
                               f" {type(block).__name__}", pipeline))
    return merged, first, diags


def _policy_checks(values: Mapping[str, _Value], policy: PolicyValues,
                   where: Location, pipeline: str) -> list[Diagnostic]:
    diags: list[Diagnostic] = []
    absolute = policy.max_injection_tokens_absolute
    abs_loc = values.get("max_injection_tokens_absolute")
    related = (Related(abs_loc.location, f"max_injection_tokens_absolute is {absolute:,}"),) \
        if abs_loc else ()

    def loc_of(key: str) -> Location:
        v = values.get(key)
        return v.location if v else where

    for key in ("min_knowledge_card_tokens", "min_bucket_tokens"):
        value = getattr(policy, key)
        if value > absolute and (key in values or abs_loc):
            diags.append(_diag(
                loc_of(key), Severity.WARNING, INJECTION_MIN_ABOVE_MAX,
                f"settings.injection.{key} {value:,} is larger than"
                f" max_injection_tokens_absolute {absolute:,}: it can never be met, and when"
                " both sources have content their budgets are always scaled down",
                pipeline, related))
    mins = policy.min_knowledge_card_tokens + policy.min_bucket_tokens
    if (not diags and mins > absolute
            and ({"min_knowledge_card_tokens", "min_bucket_tokens"} & set(values) or abs_loc)):
        key = "min_bucket_tokens" if "min_bucket_tokens" in values else \
            "min_knowledge_card_tokens"
        diags.append(_diag(
            loc_of(key), Severity.WARNING, INJECTION_MINS_ABOVE_MAX,
            f"settings.injection: min_knowledge_card_tokens + min_bucket_tokens = {mins:,} is"
            f" more than max_injection_tokens_absolute {absolute:,}: when both sources have"
            " content, both minimums are always scaled down", pipeline, related))
    shares = policy.knowledge_card_share_default + policy.bucket_content_share_default
    share_keys = {"knowledge_card_share_default", "bucket_content_share_default"} & set(values)
    if share_keys and abs(shares - 1.0) > 1e-9:
        key = sorted(share_keys)[0]
        effect = ("the split is scaled down to the total" if shares > 1 else
                  f"{1 - shares:.0%} of the injection budget is never given out")
        diags.append(_diag(
            loc_of(key), Severity.INFORMATION, INJECTION_SHARES_NOT_ONE,
            f"settings.injection: knowledge_card_share_default + bucket_content_share_default"
            f" = {shares:g}, not 1: {effect}", pipeline))
    return diags


def check_injection(report: PipelineReport, *, files: FileSource,
                    loaded: Sequence[PipelineFile] | None = None) -> InjectionCheck:
    """Validate the chain's ``settings.injection`` and compute each step's split.

    ``report`` comes from ``check_pipeline``; its chain is read again through ``files``
    (pass the same ``FileSource``, so editor buffers count), unless ``loaded`` gives the
    chain's files already parsed (child first). Never raises for bad input.
    """
    chain = list(loaded) if loaded is not None else \
        [read_pipeline(p, files) for p in report.chain]
    values, where, diags = merged_injection(chain, pipeline=report.pipeline)
    if where is None:
        return InjectionCheck(None, None, tuple(diags), ())
    from budgetlens.assembly.unified_budget import compute_unified_budget  # see the top

    policy = merged_policy({k: v.value for k, v in values.items()})
    diags.extend(_policy_checks(values, policy, where, report.pipeline))
    steps = []
    for i, s in enumerate(report.steps):
        used = s.fixed.value + s.history.value
        window = s.window.value

        def split(direct: bool, used: int = used, window: int = window) -> UnifiedBudget:
            return compute_unified_budget(model_context_window=window, tokens_used_before=used,
                                          policy=policy, has_bucket_content=True,
                                          has_knowledge_cards=True,
                                          bucket_is_direct_target=direct)

        budget = split(False)
        steps.append(StepInjection(report.pipeline, s.step, i, s.location, window, used,
                                   injection_label(budget), budget, split(True)))
    return InjectionCheck(policy, where, tuple(diags), tuple(steps))


def check_injection_text(pipeline: str, text: str) -> InjectionCheck:
    """Check the ``settings.injection`` block of one pipeline text alone (no extends, no
    steps): for editors and tests that only have the buffer."""
    pf = load_pipeline_text(pipeline, text)
    values, where, diags = merged_injection([pf], pipeline=pipeline)
    if where is None:
        return InjectionCheck(None, None, tuple(diags), ())
    policy = merged_policy({k: v.value for k, v in values.items()})
    diags.extend(_policy_checks(values, policy, where, pipeline))
    return InjectionCheck(policy, where, tuple(diags), ())


__all__ = [
    "INJECTION_CODES",
    "check_injection",
    "check_injection_text",
]
