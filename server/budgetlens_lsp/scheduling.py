"""What one analysis hands to the session, and when an analysis is held or forced.

The session runs an analysis on its worker thread and gets back an :class:`AnalysisResult`:
what to publish, whether work is left (``more``), whether it was held (``held``), and what
to run once it is delivered (``after``). The hand-off goes one way: the session reads those
fields, and nothing else.

The policy (a newcomer's summary):

- An analysis overtaken by newer edits (``Snapshot.superseded``) is *held*: nothing is
  published, and the next analysis publishes every difference since the last delivery.
- After :data:`MAX_HOLD_S` of held analyses, the next one is *forced*: it is delivered even
  though newer edits exist, so a long typing burst still sees diagnostics.
- A forced analysis still stops (and is held) once the editor has been quiet for
  :data:`FORCED_QUIET_S` after a newer edit: the burst is over, its last version goes
  first. That happens at most once per held streak (:class:`ForcedStop`).

The index applies the stop: ``Turn.snapshot.superseded`` goes to the core's
``check_pipeline(stop=...)``. :class:`HoldState` is what the policy remembers between
analyses; ``features.state.Analysis`` carries it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Generic, TypeVar

from budgetlens_lsp.workspace_index import Snapshot

log = logging.getLogger(__name__)
P = TypeVar("P")

#: Seconds a streak of superseded analyses may go undelivered.
MAX_HOLD_S = 1.0
#: Seconds of quiet after a newer edit that stop a forced analysis (see :class:`ForcedStop`):
#: longer than the gaps of a fast burst, so a burst still sees a delivery, shorter than an
#: analysis of many dependents, which the last keystroke would otherwise wait for.
FORCED_QUIET_S = 0.06


@dataclass(frozen=True)
class AnalysisResult(Generic[P]):
    """What one analysis hands to the session (iterating it yields ``publish``)."""

    publish: Sequence[P] = ()
    """The pushes to send, in order (empty when held)."""
    more: bool = False
    """Work is left (pipelines to check in the background): the session runs again."""
    held: bool = False
    """Superseded by newer edits: nothing is delivered; the next analysis delivers."""
    after: Callable[[], None] | None = None
    """Run on the worker once the result is delivered and no edit waits (frees what the
    analysis replaced)."""

    def __iter__(self) -> Iterator[P]:
        return iter(self.publish)

    def __len__(self) -> int:
        return len(self.publish)


@dataclass
class AnalysisCounts:
    """What the analyses did (the mechanism, for tests and the log): delivered, held
    (superseded, not delivered), forced (run after a held streak of ``MAX_HOLD_S``), and
    forced ones stopped for the end of a burst."""

    delivered: int = 0
    held: int = 0
    forced: int = 0
    forced_stopped: int = 0


@dataclass(kw_only=True)
class HoldState:
    """What the policy remembers between analyses (on the analysis thread). Keyword-only,
    so a state that extends it (``features.state.Analysis``) keeps its own fields first."""

    #: when the first analysis not delivered (superseded) since the last delivery ended
    held_since: float | None = None
    #: a forced analysis of the current held streak was stopped (the next one is not)
    forced_stopped: bool = False
    counts: AnalysisCounts = field(default_factory=AnalysisCounts)


class ForcedStop:
    """The ``superseded`` of a forced analysis (a held streak over :data:`MAX_HOLD_S`): true
    once newer edits exist and the editor has been quiet for :data:`FORCED_QUIET_S` (the
    burst looks over: its last version's analysis should not wait behind this one); never
    true for the second forced analysis of a streak (``allowed`` false), so a long burst
    still gets one analysis delivered. Remembers that it fired (``fired``)."""

    def __init__(self, snapshot: Snapshot, allowed: bool) -> None:
        self._superseded = snapshot.superseded
        self._quiet_for = snapshot.quiet_for
        self._allowed = allowed
        self.fired = False

    def __call__(self) -> bool:
        if not self.fired and self._allowed and self._superseded():
            self.fired = self._quiet_for() >= FORCED_QUIET_S
        return self.fired


@dataclass(frozen=True)
class Turn:
    """One analysis under the policy: the snapshot to analyse (its ``superseded`` is the
    stop the index passes on) and, for a forced analysis, its :class:`ForcedStop`."""

    snapshot: Snapshot
    may_hold: bool
    forced: ForcedStop | None = None

    def should_hold(self) -> bool:
        """Whether the analysis, now ended, is held rather than delivered."""
        if self.forced is not None:
            return self.forced.fired
        return self.may_hold and self.snapshot.superseded()


def begin(state: HoldState, snapshot: Snapshot) -> Turn:
    """Start an analysis of ``snapshot``: forced when a held streak is over
    :data:`MAX_HOLD_S` old, else one that may be held."""
    may_hold = state.held_since is None or time.monotonic() - state.held_since < MAX_HOLD_S
    if may_hold:
        return Turn(snapshot, True)
    forced = ForcedStop(snapshot, allowed=not state.forced_stopped)
    state.counts.forced += 1
    return Turn(replace(snapshot, superseded=forced), False, forced)


def hold(state: HoldState, turn: Turn) -> None:
    """The analysis of ``turn`` is held: start (or go on with) the held streak."""
    if state.held_since is None:
        state.held_since = time.monotonic()
    state.counts.held += 1
    if turn.forced is not None:
        state.forced_stopped = True
        state.counts.forced_stopped += 1
        log.info("forced analysis stopped: newer edits, then %.0f ms of quiet",
                 FORCED_QUIET_S * 1000)


def end_streak(state: HoldState) -> None:
    """An analysis is delivered (or failed): the held streak, if any, is over."""
    state.held_since = None
    state.forced_stopped = False
