"""Near-miss keys: a key that is not a known key but close to one is most likely a typo.

Pipelines and config.json may carry keys of their own (a runner's ``temperature``,
``retry``, ``retrieval_top_k``, ...), so an unknown key alone is never a problem. A key that
is *close* to a known key is: ``max_context_token`` is silently ignored and the inherited or
default value is used instead. ``suggest`` decides "close" (see docs/diagnostics.md, BL008):

1. the same after folding case and ``-`` to ``_`` (``Max-Tokens`` -> ``max_tokens``);
2. the same words (split at ``_``) but for a trailing ``s`` on some of them
   (``max_context_token``, ``prompt_dir``);
3. the known key without its unit suffix ``_tokens`` (``budget_safety_margin``), when the
   key has at least two words;
4. the same number of words (at least two), all equal but one, which abbreviates the other
   (one is a prefix of the other, of three or more characters: ``max_model_length`` for
   ``max_model_len``, ``max_out_tokens``), or is its usual short form (``ctx`` for
   ``context``: ``num_context`` for ``num_ctx``);
5. an optimal-string-alignment (Damerau-Levenshtein with adjacent transpositions) distance
   within a budget that grows with the known key's length: 0 below 4 characters, 1 below 12,
   else 2 (``max_histroy_tokens``, ``templte``, ``develpment``); ``min`` for ``max`` (or the
   other way) is a different key, not a typo (``min_output_tokens``).

Among several candidates the closest wins, then the first in the known list.
A near miss of a key that sets a budget term (``max_output_token``, ``max-model-len``) is an
error, not a warning (``check_mapping(budget=...)``): the budget checked is not the one
written. When the key it misses is in the same mapping too, the budget uses the value written
under the right name, and the near miss stays a warning.
``key_name_range`` gives the range of a key's own characters (inside its quotes), which is
what a diagnostic points at and what the rename quick-fix replaces.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from budgetlens import codes
from budgetlens.contract.shapes import Shape
from budgetlens.source import Diagnostic, Range, RenameKey, Severity
from budgetlens.yamldoc.parse import YamlDocument, YamlPath

if TYPE_CHECKING:  # only for a pydantic model given to model_keys (start-up speed)
    from pydantic import BaseModel

UNIT_SUFFIX = "_tokens"


def normalize(key: str) -> str:
    """Case folded, ``-`` read as ``_``."""
    return key.lower().replace("-", "_")


def allowed_distance(length: int) -> int:
    """The edit distance still taken for a typo of a known key of ``length`` characters."""
    if length < 4:
        return 0
    if length < 12:
        return 1
    return 2


def osa_distance(a: str, b: str, limit: int) -> int:
    """The optimal string alignment distance of ``a`` and ``b`` (insertions, deletions,
    substitutions and adjacent transpositions); ``limit + 1`` when it is above ``limit``."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            best = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                best = min(best, prev2[j - 2] + 1)
            cur[j] = best
        if min(cur) > limit:
            return limit + 1
        prev2, prev = prev, cur
    return prev[len(b)] if prev[len(b)] <= limit else limit + 1


def _same_words_but_s(a: str, b: str) -> bool:
    wa, wb = a.split("_"), b.split("_")
    return len(wa) == len(wb) and all(
        x == y or x + "s" == y or x == y + "s" for x, y in zip(wa, wb, strict=True))


#: Words that are two edits apart but mean the opposite: never a typo of each other.
_OPPOSITES = ({"min", "max"},)


#: Usual short forms of a word in keys of model servers (``num_ctx``, ``max_model_len``).
_SHORT_FORMS = ({"ctx", "context"}, {"len", "length"}, {"num", "number"})


def _abbreviates(x: str, y: str) -> bool:
    short, long = sorted((x, y), key=len)
    return (len(short) >= 3 and long.startswith(short)) or {x, y} in _SHORT_FORMS


def _one_word_abbreviated(a: str, b: str) -> bool:
    """``a`` and ``b`` have the same two or more words but one, which abbreviates the other."""
    wa, wb = a.split("_"), b.split("_")
    if len(wa) != len(wb) or len(wa) < 2:
        return False
    differ = [(x, y) for x, y in zip(wa, wb, strict=True) if x != y]
    return len(differ) == 1 and _abbreviates(*differ[0])


def _opposite_words(a: str, b: str) -> bool:
    wa, wb = a.split("_"), b.split("_")
    return len(wa) == len(wb) and any({x, y} in _OPPOSITES for x, y in zip(wa, wb, strict=True))


def _score(key: str, known: str) -> int | None:
    """How far ``key`` is from ``known`` (lower is closer); None when not close."""
    k, n = normalize(key), normalize(known)
    if k == n:
        return 0
    if _same_words_but_s(k, n):
        return 1
    if k.count("_") >= 1 and (k + UNIT_SUFFIX == n or _same_words_but_s(k + UNIT_SUFFIX, n)):
        return 1
    if _one_word_abbreviated(k, n):
        return 1
    limit = allowed_distance(len(n))
    if limit == 0 or _opposite_words(k, n):
        return None
    dist = osa_distance(k, n, limit)
    return dist if dist <= limit else None


def suggest(key: str, known: Sequence[str]) -> str | None:
    """The known key ``key`` most likely misspells; None when it is known or not close."""
    if key in known:
        return None
    return _suggest(key, tuple(known))


@functools.lru_cache(maxsize=4096)
def _suggest(key: str, known: tuple[str, ...]) -> str | None:
    best: tuple[int, int, str] | None = None
    for index, candidate in enumerate(known):
        score = _score(key, candidate)
        if score is not None and (best is None or (score, index) < best[:2]):
            best = (score, index, candidate)
    return best[2] if best is not None else None


@functools.lru_cache(maxsize=64)
def model_keys(model: type[Shape] | type[BaseModel], *extra: str) -> tuple[str, ...]:
    """The keys a shape or a pydantic model reads: field names, then their aliases, then
    ``extra``."""
    names: list[str] = []
    if isinstance(model, type) and issubclass(model, Shape):
        names += (spec.name for spec in model.FIELDS)
        aliases = [name for spec in model.FIELDS for name in spec.aliases]
    else:
        aliases = _pydantic_aliases(model)
    names += (name for name in dict.fromkeys(aliases) if name not in names)
    return (*names, *(e for e in extra if e not in names))


def _pydantic_aliases(model: type[BaseModel]) -> list[str]:
    from pydantic import AliasChoices  # see the top

    names: list[str] = list(model.model_fields)
    for info in model.model_fields.values():
        alias = info.validation_alias
        choices = alias.choices if isinstance(alias, AliasChoices) else [alias]
        names += (choice for choice in [*choices, info.alias] if isinstance(choice, str))
    return names


# ------------------------------------------------------------------------------- ranges
@dataclass(frozen=True)
class TextSpot:
    """Where a key's (or a string value's) own characters are, and the text that replaces
    them with another name; ``exact`` is False when the source could not be matched
    (an escaped key), then ``range`` is the whole key and no edit is safe."""

    range: Range
    exact: bool


def _spot(doc: YamlDocument, start: int, end: int, name: str) -> TextSpot:
    raw = doc.text[start:end]
    if raw == name:
        return TextSpot(doc.index.range(start, end), True)
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"" and raw[1:-1] == name:
        return TextSpot(doc.index.range(start + 1, end - 1), True)
    return TextSpot(doc.index.range(start, end), False)


def key_name_range(doc: YamlDocument, path: YamlPath) -> TextSpot | None:
    """The characters of the key of the entry at ``path`` (without quotes)."""
    span = doc.span(path)
    if span is None or span.key_start is None or span.key_end is None or not path:
        return None
    return _spot(doc, span.key_start, span.key_end, str(path[-1]))


def value_text_range(doc: YamlDocument, path: YamlPath) -> TextSpot | None:
    """The characters of the string value at ``path`` (without quotes)."""
    span = doc.span(path)
    value = doc.node(path)
    if span is None or not isinstance(value, str):
        return None
    return _spot(doc, span.start, span.end, value)


def _safe_name(name: str) -> bool:
    return name.replace("_", "a").isalnum() and name.isascii()


# -------------------------------------------------------------------------- diagnostics
def rename_data(old: str, new: str, spot: TextSpot, *, blocked: bool = False
                ) -> RenameKey:
    """What the rename quick-fix needs: replace ``range`` with ``new_text``."""
    fixable = spot.exact and not blocked and _safe_name(new)
    return RenameKey(old, new, spot.range, new if fixable else None)


#: What a near miss of a budget key costs (the end of its BL008 error).
BUDGET_NOTE = " It sets a budget term: until it is renamed, the budget ignores this value"


def near_miss_diagnostic(file: str, key: str, suggestion: str, spot: TextSpot | None,
                         *, extra: str = "", blocked: bool = False,
                         budget: bool = False) -> Diagnostic:
    """The BL008 warning for ``key``: ``unknown key 'k': did you mean 's'?`` (+ ``extra``);
    an error (with ``BUDGET_NOTE``) when ``budget``: ``suggestion`` sets a budget term and
    is not in the mapping."""
    rng = spot.range if spot is not None else Range.at(0, 0)
    data = rename_data(key, suggestion, spot, blocked=blocked) if spot is not None else None
    severity = Severity.ERROR if budget else Severity.WARNING
    return Diagnostic(file, rng, severity, codes.NEAR_MISS_KEY,
                      f"unknown key {key!r}: did you mean {suggestion!r}?{extra}"
                      + (BUDGET_NOTE if budget else ""), data=data)


def check_mapping(file: str, doc: YamlDocument | None, path: YamlPath,
                  known: Sequence[str], *, extra: dict[str, str] | None = None,
                  budget: Collection[str] = ()) -> list[Diagnostic]:
    """A BL008 warning for each key of the mapping at ``path`` that misspells a known key;
    an error when the key it misses is one of ``budget`` (it sets a budget term) and is not
    in the mapping too.

    ``extra`` maps a suggestion to more text for its message (what the typo costs).
    """
    if doc is None:
        return []
    node = doc.node(path)
    if not isinstance(node, dict):
        return []
    out: list[Diagnostic] = []
    for key in node:
        if not isinstance(key, str):
            continue
        suggestion = suggest(key, known)
        if suggestion is None:
            continue
        spot = key_name_range(doc, (*path, key))
        out.append(near_miss_diagnostic(file, key, suggestion, spot,
                                        extra=(extra or {}).get(suggestion, ""),
                                        blocked=suggestion in node,
                                        budget=suggestion in budget and suggestion not in node))
    return out
