"""Pack documents into a context for one intent: prioritize, trim by rank, cap.

``pack_context(docs, intent, max_chars=..., max_tokens=...)``:

1. **Intent.** ``intent`` is an intent name, free text (matched by the intent map's keyword
   rules, first match in file order, else the map's default intent), or structured data
   ``{"intent": NAME, "params": {...}}``. The intent gives the *required types*.
2. **Prioritize.** Each document scores (weights from the intent map's ``scoring``)::

       score = 10 * (schema_type is required for the intent)
             +  5 * is_leaf
             +  3 * (origin_type is user input)
             +  1 * recency          # (created_at - oldest) / (newest - oldest), 0 if unknown

   and documents are ranked by score, highest first, ties by input order. When the intent
   lists required types, documents of other types are dropped (``drop_unrequired``) and
   ranked after every candidate.
3. **Trim by rank** (``trimming``): ranks below ``full_count`` (4) keep their full content;
   ranks below half the candidates have every string over ``truncate_chars`` (500) cut, with
   `` [truncated]``; the rest keep metadata and structure only (top-level objects and arrays
   become ``{"summary": "Original had N items"}``, strings are cut to ``summary_chars`` (100)
   with `` [summarized]``, numbers, booleans and null stay).
4. **Cap.** Documents are added in rank order while the context stays within ``max_chars``
   (length of the text, in code points) and ``max_tokens``; a document that does not fit is
   first trimmed harder (``escalate``), and if it still does not fit it and every lower-ranked
   document are dropped: a higher-ranked document is never dropped while a lower one is kept.

Each document renders as ``## <schema_type> · <id>[ (trimmed: ...)]``, a line of compact JSON
and a blank line. The result carries the context, its size, and a report row per document.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    JsonValue,
    StringConstraints,
    TypeAdapter,
    ValidationError,
    field_validator,
    model_validator,
)

from budgetlens.assembly.input_errors import InputError, describe_validation_error
from budgetlens.assembly.text import one_line
from budgetlens.enums import TextEnum
from budgetlens.serialize import JSON_AS
from budgetlens.tokens.core import TokenCounter, TokenizerLike, as_counter

MAX_DOC_CHARS = 8 * 1024 * 1024
"""A document whose full rendering is longer than this is rejected by ``parse_docs``."""



class PackTier(TextEnum):
    """How much of a document is kept, most first (step 3 of the module doc)."""

    FULL = "full"
    TRUNCATED = "truncated"
    METADATA = "metadata"


class Status(TextEnum):
    """What became of a document (``PackedDoc.status``)."""

    KEPT = "kept"
    TRIMMED = "trimmed"
    DROPPED = "dropped"


_TIERS: tuple[PackTier, ...] = (PackTier.FULL, PackTier.TRUNCATED, PackTier.METADATA)
_TIER_NOTE = {PackTier.TRUNCATED: "long strings truncated",
              PackTier.METADATA: "metadata and structure only"}

NonEmpty = Annotated[str, StringConstraints(min_length=1)]


# ----------------------------------------------------------------------------------------------
# Documents


class PackDoc(BaseModel):
    """A document to pack (one element of the ``budgetlens pack`` DOCS.json array)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: NonEmpty
    schema_type: NonEmpty
    data: JsonValue
    is_leaf: bool = False
    origin_type: str | None = None
    """e.g. ``user_input``, ``ai_generated``."""
    created_at: datetime | None = None
    """ISO 8601; a time without a zone is taken as UTC."""

    @field_validator("created_at", mode="before")
    @classmethod
    def _iso_8601(cls, value: Any) -> Any:
        if value is None or isinstance(value, datetime):
            return value
        if not isinstance(value, str):
            raise ValueError("expected an ISO 8601 date-time string")
        text = value.strip()
        if text.endswith(("Z", "z")):
            text = text[:-1] + "+00:00"
        try:
            return datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"not an ISO 8601 date-time: {value[:40]!r}") from None


_DOCS = TypeAdapter(list[PackDoc])


def parse_docs(text: str, *, max_doc_chars: int = MAX_DOC_CHARS) -> list[PackDoc]:
    """The documents of a DOCS.json text; ``InputError`` naming each bad field otherwise."""
    try:
        docs = _DOCS.validate_json(text)
    except ValidationError as exc:
        raise InputError(describe_validation_error(exc, "docs")) from None
    problems = [f"docs[{i}].data: {size:,} characters, more than the {max_doc_chars:,} a"
                " document may hold"
                for i, d in enumerate(docs)
                if (size := len(_dumps(d.data))) > max_doc_chars]
    if problems:
        raise InputError(problems)
    return docs


def _coerce_docs(docs: Sequence[PackDoc | Mapping[str, Any]]) -> list[PackDoc]:
    out: list[PackDoc] = []
    errors: list[str] = []
    for i, d in enumerate(docs):
        if isinstance(d, PackDoc):
            out.append(d)
            continue
        try:
            out.append(PackDoc.model_validate(d))
        except ValidationError as exc:
            errors.extend(describe_validation_error(exc, f"docs[{i}]"))
    seen: dict[str, int] = {}
    for i, d in enumerate(out):
        if d.id in seen and not errors:
            errors.append(f"docs[{i}].id: {d.id!r} repeats docs[{seen[d.id]}]")
        seen.setdefault(d.id, i)
    if errors:
        raise InputError(errors)
    return out


# ----------------------------------------------------------------------------------------------
# Intent map


class IntentRule(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    description: str = ""
    required_types: tuple[str, ...] = Field(default=(), strict=False)
    keywords: tuple[str, ...] = Field(default=(), strict=False)
    """Regular expressions, searched case-insensitively in free-text intents. Only checked to
    compile: one that backtracks catastrophically (``(a+)+$``) is not caught, see "Keywords are
    code" in docs/injection-and-packing.md."""

    @field_validator("keywords")
    @classmethod
    def _compiles(cls, patterns: tuple[str, ...]) -> tuple[str, ...]:
        for p in patterns:
            try:
                re.compile(p)
            except re.error as exc:
                raise ValueError(f"keyword {p!r} is not a valid regular expression: {exc}") \
                    from None
        return patterns


class PackScoring(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    required: float = 10
    leaf: float = 5
    user_input: float = 3
    recency: float = 1
    user_input_origins: tuple[str, ...] = Field(default=("user_input",), strict=False)
    drop_unrequired: bool = True


class PackTrimming(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    full_count: int = Field(default=4, ge=0)
    truncate_chars: int = Field(default=500, ge=0)
    summary_chars: int = Field(default=100, ge=0)
    truncated_marker: str = " [truncated]"
    summarized_marker: str = " [summarized]"
    escalate: bool = True


class IntentMap(BaseModel):
    """Intents and their required types, keyword rules, scoring weights and trimming tiers."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    version: Literal[1] = 1
    default_intent: str
    scoring: PackScoring = Field(default_factory=PackScoring)
    trimming: PackTrimming = Field(default_factory=PackTrimming)
    intents: dict[str, IntentRule]

    @model_validator(mode="after")
    def _default_exists(self) -> IntentMap:
        if self.default_intent not in self.intents:
            raise ValueError(f"default_intent: {self.default_intent!r} is not one of the intents")
        return self


def intent_map_from_text(text: str, *, source: str = "intent map") -> IntentMap:
    """An ``IntentMap`` from YAML or JSON text; ``InputError`` naming bad fields otherwise."""
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError([f"{source}: not valid YAML/JSON ({exc})".replace("\n", " ")]) \
            from None
    if not isinstance(raw, dict):
        raise InputError([f"{source}: expected a mapping with 'default_intent' and 'intents'"])
    try:
        return IntentMap.model_validate(raw)
    except ValidationError as exc:
        raise InputError([f"{source}: {line}" for line in describe_validation_error(exc)]) \
            from None


def load_intent_map(path: str | Path) -> IntentMap:
    """The intent map in a YAML or JSON file."""
    p = Path(path)
    try:
        text = p.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError([f"{p}: cannot read the intent map ({exc})"]) from None
    return intent_map_from_text(text, source=str(p))


@lru_cache(maxsize=1)
def default_intent_map() -> IntentMap:
    """The shipped ``budgetlens/assembly/intents.yaml`` (immutable, parsed once per process)."""
    text = resources.files("budgetlens.assembly").joinpath("intents.yaml").read_text("utf-8")
    return intent_map_from_text(text, source="budgetlens/assembly/intents.yaml")


@dataclass(frozen=True)
class ResolvedIntent:
    name: str
    required_types: tuple[str, ...]
    matched_by: str
    """``name``, ``structured``, ``keyword <regex>`` or ``default``."""
    params: Mapping[str, Any]

    JSON_ORDER: ClassVar = ("name", "matched_by", "required_types", "params")


def resolve_intent(intent: str | Mapping[str, Any], intent_map: IntentMap) -> ResolvedIntent:
    """The intent a request means: by name, structured data, or keyword rules on free text."""
    if isinstance(intent, Mapping):
        return _resolve_structured(intent, intent_map)
    if intent in intent_map.intents:
        return ResolvedIntent(intent, intent_map.intents[intent].required_types, "name", {})
    for name, rule in intent_map.intents.items():
        for pattern in rule.keywords:
            if re.search(pattern, intent, re.IGNORECASE):
                return ResolvedIntent(name, rule.required_types, f"keyword {pattern}", {})
    name = intent_map.default_intent
    return ResolvedIntent(name, intent_map.intents[name].required_types, "default", {})


def _resolve_structured(intent: Mapping[str, Any], intent_map: IntentMap) -> ResolvedIntent:
    """``{"intent": NAME, "params": {...}}``, or ``{"user_request": TEXT, ...}`` (keywords)."""
    unknown = sorted(set(intent) - {"intent", "params", "user_request"})
    if unknown:
        raise InputError([f"intent.{unknown[0]}: unknown field"])
    params = intent.get("params", {})
    if not isinstance(params, Mapping):
        raise InputError(["intent.params: expected an object"])
    name = intent.get("intent")
    if name is None:
        text = intent.get("user_request")
        if not isinstance(text, str):
            raise InputError(["intent.intent: field required"])
        found = resolve_intent(text, intent_map)
        return ResolvedIntent(found.name, found.required_types, found.matched_by, params)
    if not isinstance(name, str):
        raise InputError(["intent.intent: expected a string"])
    if name not in intent_map.intents:
        raise InputError([f"intent.intent: unknown intent {name!r}; known: "
                          f"{', '.join(intent_map.intents)}"])
    return ResolvedIntent(name, intent_map.intents[name].required_types, "structured", params)


# ----------------------------------------------------------------------------------------------
# Trimming and rendering


def _dumps(data: JsonValue) -> str:
    return json.dumps(data, ensure_ascii=False)


def _truncate_strings(value: JsonValue, limit: int, marker: str) -> JsonValue:
    if isinstance(value, str):
        return value[:limit] + marker if len(value) > limit else value
    if isinstance(value, dict):
        return {k: _truncate_strings(v, limit, marker) for k, v in value.items()}
    if isinstance(value, list):
        return [_truncate_strings(v, limit, marker) for v in value]
    return value


def _metadata_only(value: JsonValue, t: PackTrimming) -> JsonValue:
    def leaf(v: JsonValue) -> JsonValue:
        if isinstance(v, (dict, list)):
            return {"summary": f"Original had {len(v)} items"}
        if isinstance(v, str) and len(v) > t.summary_chars:
            return v[:t.summary_chars] + t.summarized_marker
        return v

    if isinstance(value, dict):
        return {k: leaf(v) for k, v in value.items()}
    return leaf(value)


def trim_data(data: JsonValue, tier: PackTier, trimming: PackTrimming) -> JsonValue:
    """``data`` at a trimming tier (``full`` returns it unchanged)."""
    if tier == PackTier.TRUNCATED:
        return _truncate_strings(data, trimming.truncate_chars, trimming.truncated_marker)
    if tier == PackTier.METADATA:
        return _metadata_only(data, trimming)
    return data


def render_doc(doc: PackDoc, data: JsonValue, tier: PackTier) -> str:
    note = f" (trimmed: {_TIER_NOTE[tier]})" if tier != PackTier.FULL else ""
    return f"## {one_line(doc.schema_type)} · {one_line(doc.id)}{note}\n{_dumps(data)}\n\n"


def tier_for_rank(rank: int, candidates: int, trimming: PackTrimming) -> PackTier:
    if rank < trimming.full_count:
        return PackTier.FULL
    return PackTier.TRUNCATED if rank < candidates / 2 else PackTier.METADATA


# ----------------------------------------------------------------------------------------------
# Packing


@dataclass(frozen=True)
class PackedDoc:
    """The report row of one document."""

    id: str
    schema_type: str
    status: Status
    rank: int
    score: float = field(metadata={JSON_AS: lambda score: round(score, 6)})
    tier: PackTier | None
    """The tier rendered (None when dropped)."""
    chars_before: int
    """Length of the document rendered in full."""
    chars_after: int
    tokens_after: int | None = field(metadata={"json": False})
    """Tokens of the rendered block (None unless a token cap was given, or dropped)."""
    reason: str


@dataclass(frozen=True)
class PackResult:
    """What ``pack_context`` returns. Its JSON (``to_jsonable``; ``budgetlens pack --format
    json``) rounds scores to 6 decimals and gives the intent as name, matched_by,
    required_types and params."""

    context: str
    chars: int
    tokens: int
    tokenizer: str
    intent: ResolvedIntent
    max_chars: int | None
    max_tokens: int | None
    report: tuple[PackedDoc, ...]
    """One row per document, in rank order."""

    def count(self, status: Status | str) -> int:
        return sum(1 for r in self.report if r.status == status)


def _timestamp(d: PackDoc) -> float | None:
    if d.created_at is None:
        return None
    ts = d.created_at
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=timezone.utc)
    return ts.timestamp()


def score_docs(docs: Sequence[PackDoc], required: Sequence[str],
               scoring: PackScoring) -> list[float]:
    """Each document's priority score (see the module docstring)."""
    required_set = set(required)
    origins = set(scoring.user_input_origins)
    stamps = [_timestamp(d) for d in docs]
    known = [t for t in stamps if t is not None]
    lo, hi = (min(known), max(known)) if known else (0.0, 0.0)
    scores = []
    for d, t in zip(docs, stamps, strict=True):
        s = 0.0
        if d.schema_type in required_set:
            s += scoring.required
        if d.is_leaf:
            s += scoring.leaf
        if d.origin_type in origins:
            s += scoring.user_input
        if t is not None and hi > lo:
            s += scoring.recency * (t - lo) / (hi - lo)
        scores.append(s)
    return scores


def _check_caps(max_chars: int | None, max_tokens: int | None) -> None:
    for name, cap in (("max_chars", max_chars), ("max_tokens", max_tokens)):
        if cap is not None and (isinstance(cap, bool) or not isinstance(cap, int) or cap < 0):
            raise InputError([f"{name}: expected an integer >= 0, got {cap!r}"])


def _rank(items: list[PackDoc], resolved: ResolvedIntent,
          scoring: PackScoring) -> tuple[list[int], list[float], int]:
    """Document indices in rank order, each document's score, and how many are candidates
    (the rest are of types the intent does not require, ranked last)."""
    scores = score_docs(items, resolved.required_types, scoring)
    required = set(resolved.required_types)
    filtering = bool(required) and scoring.drop_unrequired

    def key(i: int) -> tuple[bool, float, int]:
        return (filtering and items[i].schema_type not in required, -scores[i], i)

    order = sorted(range(len(items)), key=key)
    candidates = sum(1 for i in order if not (filtering and items[i].schema_type not in required))
    return order, scores, candidates


class _Packer:
    """Adds documents in rank order while the context stays within its caps (step 4)."""

    def __init__(self, counter: TokenCounter, trimming: PackTrimming, max_chars: int | None,
                 max_tokens: int | None) -> None:
        self.counter, self.trimming = counter, trimming
        self.max_chars, self.max_tokens = max_chars, max_tokens
        self.blocks: list[str] = []
        self.chars = 0
        self.tokens = 0
        self.rows: list[PackedDoc] = []
        self.cut_reason = ""

    def add(self, doc: PackDoc, rank: int, score: float, candidates: int,
            intent: ResolvedIntent) -> None:
        full = render_doc(doc, doc.data, PackTier.FULL)

        def row(status: Status, tier: PackTier | None, chars_after: int, tokens_after: int | None,
                reason: str) -> None:
            self.rows.append(PackedDoc(doc.id, doc.schema_type, status, rank, score, tier,
                                       len(full), chars_after, tokens_after, reason))

        if rank >= candidates:
            row(Status.DROPPED, None, 0, None, f"type {doc.schema_type!r} is not "
                                               f"required for intent {intent.name!r}")
            return
        if self.cut_reason:
            row(Status.DROPPED, None, 0, None, self.cut_reason)
            return
        tier = tier_for_rank(rank, candidates, self.trimming)
        placed = self._place(doc, full, tier)
        if placed is None:
            row(Status.DROPPED, None, 0, None, f"over the cap ({self._left()} left)")
            self.cut_reason = f"cap reached at rank {rank} ({doc.id})"
            return
        t, text, n = placed
        self.blocks.append(text)
        self.chars += len(text)
        self.tokens += n or 0
        if text == full:
            reason = f"rank {rank}: full" if t == PackTier.FULL else f"rank {rank}: nothing to trim"
            row(Status.KEPT, PackTier.FULL, len(text), n, reason)
            return
        reason = f"rank {rank}: {_TIER_NOTE[t]}" + ("" if t == tier else " to fit the cap")
        row(Status.TRIMMED, t, len(text), n, reason)

    def _place(self, doc: PackDoc, full: str,
               tier: PackTier) -> tuple[PackTier, str, int | None] | None:
        """The first tier from ``tier`` on (only ``tier`` without ``escalate``) that fits the
        caps: the tier, the rendered block and its tokens (None without a token cap)."""
        tried = _TIERS[_TIERS.index(tier):] if self.trimming.escalate else (tier,)
        for t in tried:
            text = full
            if t != PackTier.FULL:
                trimmed = trim_data(doc.data, t, self.trimming)
                if trimmed != doc.data:
                    text = render_doc(doc, trimmed, t)
            if self.max_chars is not None and self.chars + len(text) > self.max_chars:
                continue
            n = self.counter.count(text) if self.max_tokens is not None else None
            if self.max_tokens is not None and n is not None and self.tokens + n > self.max_tokens:
                continue
            return t, text, n
        return None

    def _left(self) -> str:
        left = []
        if self.max_chars is not None:
            left.append(f"{self.max_chars - self.chars:,} chars")
        if self.max_tokens is not None:
            left.append(f"{self.max_tokens - self.tokens:,} tokens")
        return " / ".join(left)

    def joined(self) -> tuple[str, int]:
        """The context and its tokens. A tokenizer whose counts are not additive over blocks:
        drop from the end until it fits."""
        context = "".join(self.blocks)
        total_tokens = self.counter.count(context)
        while self.max_tokens is not None and total_tokens > self.max_tokens and self.blocks:
            self.blocks.pop()
            last = max(k for k, r in enumerate(self.rows) if r.status != Status.DROPPED)
            r = self.rows[last]
            self.rows[last] = PackedDoc(r.id, r.schema_type, Status.DROPPED, r.rank, r.score,
                                        None, r.chars_before, 0, None,
                                        "over the token cap once joined")
            context = "".join(self.blocks)
            total_tokens = self.counter.count(context)
        return context, total_tokens


def pack_context(
    docs: Sequence[PackDoc | Mapping[str, Any]],
    intent: str | Mapping[str, Any],
    *,
    max_chars: int | None = None,
    max_tokens: int | None = None,
    intent_map: IntentMap | None = None,
    counter: TokenizerLike | None = None,
) -> PackResult:
    """Prioritize, trim and cap ``docs`` for ``intent`` (see the module docstring).

    ``max_chars`` caps the length of the context (code points), ``max_tokens`` its tokens
    (``counter``'s tokenizer, default ``cl100k_base``); None means no cap. Invalid documents,
    an unknown structured intent or a negative cap raise ``InputError``.
    """
    _check_caps(max_chars, max_tokens)
    imap = intent_map if intent_map is not None else default_intent_map()
    count = as_counter(counter)
    items = _coerce_docs(docs)
    resolved = resolve_intent(intent, imap)
    order, scores, candidates = _rank(items, resolved, imap.scoring)
    packer = _Packer(count, imap.trimming, max_chars, max_tokens)
    for rank, i in enumerate(order):
        packer.add(items[i], rank, scores[i], candidates, resolved)
    context, total_tokens = packer.joined()
    return PackResult(context=context, chars=len(context), tokens=total_tokens,
                      tokenizer=count.name, intent=resolved, max_chars=max_chars,
                      max_tokens=max_tokens, report=tuple(packer.rows))
