"""A check that may go stale can be stopped midway (``check_pipeline(..., stop=...)``).

The stop test is asked between steps (and before each file of the extends chain is loaded);
once it returns true the check raises ``CheckStopped`` and the cache holds no report and no
structure of it, so the next check of the same files gives what an uninterrupted one gives.
Counted, never timed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from budgetlens.contract.cache import BudgetCache
from budgetlens.contract.check import CheckStopped, check_pipeline
from budgetlens.contract.results import CheckOptions, PipelineReport
from budgetlens.files import DiskFiles, OverlayFiles
from tests.core.contract.helpers import make_workspace

STEPS = 12
OPTIONS = CheckOptions(environ={})


def _step(index: int) -> str:
    return (f"  - id: s{index:02d}\n"
            "    type: call_model\n"
            f"    prompt_key: {'long' if index % 4 == 0 else 'short'}\n"
            "    user_parts:\n"
            f"      template: \"Question {{question}} ({index})\"\n"
            f"    max_output_tokens: {400 + 10 * index}\n")


def _workspace(root: Path) -> Path:
    """A pipeline of STEPS steps extending a parent; every 4th step is over budget."""
    make_workspace(
        root,
        config={"model_context_window": 4096, "model_max_tokens": 512,
                "prompts_dir": "prompts"},
        pipelines={
            "base.yaml": "settings:\n  max_context_tokens: 2000\n  max_history_tokens: 100\n",
            "main.yaml": "extends: base.yaml\nsteps:\n" + "".join(_step(i) for i in range(STEPS)),
        },
        prompts={"short.txt": "Answer briefly.\n", "long.txt": "word " * 1800 + "\n"})
    return root / "pipelines" / "main.yaml"


class StopAfter:
    """A stop test that answers false ``k`` times, then true; counts how often it was asked."""

    def __init__(self, k: int | None) -> None:
        self.k = k
        self.polls = 0

    def __call__(self) -> bool:
        self.polls += 1
        return self.k is not None and self.polls > self.k


def _uninterrupted(path: Path, files: DiskFiles | OverlayFiles) -> PipelineReport:
    return check_pipeline(path, files=files, options=OPTIONS, cache=BudgetCache())


def test_the_stop_test_is_asked_for_every_step_of_the_plan_and_of_the_check(
        tmp_path: Path) -> None:
    path = _workspace(tmp_path / "ws")
    never = StopAfter(None)
    report = check_pipeline(path, files=DiskFiles(), options=OPTIONS, cache=BudgetCache(),
                            stop=never)
    assert len(report.steps) == STEPS
    assert never.polls >= 2 * STEPS  # planning and checking each step
    assert report == _uninterrupted(path, DiskFiles())


@pytest.mark.parametrize("k", [0, 1, 3, STEPS, STEPS + 5, 2 * STEPS - 1])
def test_a_stopped_check_raises_and_leaves_nothing_in_the_cache(tmp_path: Path, k: int) -> None:
    path = _workspace(tmp_path / "ws")
    full = StopAfter(None)
    check_pipeline(path, files=DiskFiles(), options=OPTIONS, cache=BudgetCache(), stop=full)
    assert k < full.polls  # the stop falls inside the check
    cache = BudgetCache()
    stop = StopAfter(k)
    with pytest.raises(CheckStopped):
        check_pipeline(path, files=DiskFiles(), options=OPTIONS, cache=cache, stop=stop)
    assert stop.polls == k + 1  # it stopped at the first true answer, asked nothing more
    sizes = cache.sizes()
    assert sizes["reports"] == 0 and sizes["structures"] == 0
    # the same cache, no stop: the report of a check never interrupted
    again = check_pipeline(path, files=DiskFiles(), options=OPTIONS, cache=cache)
    assert again == _uninterrupted(path, DiskFiles())
    assert len(again.steps) == STEPS
    assert "BL050" in [d.code for d in again.diagnostics]


def test_a_check_stopped_after_an_edit_does_not_leave_the_old_report_current(
        tmp_path: Path) -> None:
    """An editor: version 1 checked and cached, version 2 stopped midway, version 2 checked
    again gives version 2's report (not version 1's, not a partial one)."""
    path = _workspace(tmp_path / "ws")
    cache = BudgetCache()
    v1 = path.read_text()
    first = check_pipeline(path, files=OverlayFiles(DiskFiles(), {str(path): v1}),
                           options=OPTIONS, cache=cache)
    v2 = v1.replace("extends: base.yaml\n",
                    "extends: base.yaml\nsettings:\n  max_context_tokens: 1000\n")
    files = OverlayFiles(DiskFiles(), {str(path): v2})
    stop = StopAfter(STEPS // 2)  # inside the plan of version 2
    with pytest.raises(CheckStopped):
        check_pipeline(path, files=files, options=OPTIONS, cache=cache, stop=stop)
    second = check_pipeline(path, files=files, options=OPTIONS, cache=cache)
    assert second == _uninterrupted(path, files) != first
    assert second.context is not None and second.context.value == 1000


def test_a_recount_stopped_midway_stores_no_report(tmp_path: Path) -> None:
    """The structure is cached and a prompt changed: only the count-and-add part runs, and
    stopping it leaves the cache with no report for the new prompt."""
    path = _workspace(tmp_path / "ws")
    cache = BudgetCache()
    check_pipeline(path, files=DiskFiles(), options=OPTIONS, cache=cache)
    prompt = str(tmp_path / "ws" / "prompts" / "short.txt")
    files = OverlayFiles(DiskFiles(), {prompt: "Answer briefly, in French.\n"})
    counted = StopAfter(None)
    check_pipeline(path, files=files, options=OPTIONS, cache=BudgetCache(), stop=counted)
    recount = StopAfter(None)
    check_pipeline(path, files=OverlayFiles(DiskFiles(), {prompt: "Answer.\n"}),
                   options=OPTIONS, cache=cache, stop=recount)  # structure from the cache
    assert STEPS <= recount.polls < counted.polls  # only the checker's step loop asks
    stop = StopAfter(STEPS // 2)
    with pytest.raises(CheckStopped):
        check_pipeline(path, files=files, options=OPTIONS, cache=cache, stop=stop)
    assert cache.sizes()["reports"] == 1  # the report of "Answer." only, not current
    again = check_pipeline(path, files=files, options=OPTIONS, cache=cache)
    assert again == _uninterrupted(path, files)
