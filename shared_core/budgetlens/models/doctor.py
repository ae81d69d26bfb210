"""``budgetlens models --doctor``: suspicious registry entries, and whether each is fixed
(by corrections.json), justified (an exception with its reason) or not.

The rules are in ``models.checks``. An entry a models.json set is the user's: its findings
are never justified by the bundled exceptions.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from budgetlens.models.checks import SOURCES_DISAGREE, findings
from budgetlens.models.registry import Registry


class Status(str, Enum):
    FIXED = "fixed"
    JUSTIFIED = "justified"
    UNJUSTIFIED = "unjustified"


@dataclass(frozen=True)
class Finding:
    model: str
    check: str
    """The rule's id (``models.checks.RULES``)."""
    message: str
    status: Status
    reason: str = ""
    """Why it is fixed or justified (empty when unjustified)."""
    where: str = ""
    """Where the numbers come from: the entry's source, or the models.json value."""


def _entry_findings(registry: Registry) -> list[Finding]:
    out: list[Finding] = []
    for name in sorted(registry.models):
        info = registry.models[name]
        for check, message in findings(info.window, info.max_input, info.max_output):
            if info.origins:
                where = ", ".join(f"{k} at {info.provenance(k)[len(name) + 8:-1]}"
                                  for k in dict.fromkeys(k for k, _ in info.origins))
                out.append(Finding(name, check, message, Status.UNJUSTIFIED, where=where))
                continue
            reason = registry.exceptions.get(name, {}).get(check, "")
            out.append(Finding(name, check, message,
                               Status.JUSTIFIED if reason else Status.UNJUSTIFIED,
                               reason, info.source))
    return out


def _disagreement_findings(registry: Registry) -> list[Finding]:
    out: list[Finding] = []
    for name, items in sorted((registry.disagreements or {}).items()):
        reason = registry.exceptions.get(name, {}).get(SOURCES_DISAGREE, "")
        for item in items:
            message = (f"{item['field']}: {item['kept_from']} says {item['kept']:,},"
                       f" {item['other_from']} says {item['other']:,}")
            out.append(Finding(name, SOURCES_DISAGREE, message,
                               Status.JUSTIFIED if reason else Status.UNJUSTIFIED, reason,
                               "registry.json disagreements"))
    return out


def doctor(registry: Registry) -> tuple[Finding, ...]:
    """Every finding of ``registry`` (the bundled one with corrections applied, and any
    models.json entries): the fixed ones first, then the rest by model."""
    fixed = [Finding(f.model, f.check, "corrected by corrections.json", Status.FIXED,
                     f.reason, f.source) for f in registry.fixed]
    return tuple(fixed + _entry_findings(registry) + _disagreement_findings(registry))


def unjustified(found: tuple[Finding, ...]) -> list[Finding]:
    return [f for f in found if f.status is Status.UNJUSTIFIED]
