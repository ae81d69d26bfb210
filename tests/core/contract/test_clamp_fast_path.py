"""``compute_clamp`` gives ``ClampValues()`` without the full computation when every step
fits as it is (the common case of a large run): on generated steps it answers what the full
computation (``clamp._clamp``) answers, and the full one runs only when something is lowered
or a shared target is given."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from budgetlens.contract import clamp
from budgetlens.contract.clamp import compute_clamp
from budgetlens.contract.enums import OutputSource
from budgetlens.contract.results import ClampValues, StepBudget, Term


def _step(i: int, fixed: int, output: int, *, history: int = 0, margin: int = 128,
          window: int | None = None, ceiling: int | None = None,
          floor: int | None = None) -> StepBudget:
    t = Term(0)
    return StepBudget(
        pipeline="p.yaml", step=f"s{i}", index=i, location=None,  # type: ignore[arg-type]
        defined_in="p.yaml", system_prompt=t, template=t, format_overhead=t,
        fixed=Term(fixed), history=Term(history), context=Term(0), output=Term(output),
        output_source=OutputSource.MAX_OUTPUT_TOKENS, margin=Term(margin),
        window=Term(window or 0), total=0, headroom=0, fits=True,
        output_floor=Term(floor) if floor is not None else None,
        model="m" if window is not None else None,
        ceiling=Term(ceiling) if ceiling is not None else None)


@st.composite
def cases(draw: Any) -> tuple[list[StepBudget], dict[str, Any]]:
    n = draw(st.integers(1, 4))
    steps = [_step(i, draw(st.integers(0, 3000)), draw(st.integers(1, 3000)),
                   history=draw(st.integers(0, 500)), margin=draw(st.integers(0, 200)),
                   window=draw(st.none() | st.integers(1000, 9000)),
                   ceiling=draw(st.none() | st.integers(1, 3000)),
                   floor=draw(st.none() | st.integers(0, 3000))) for i in range(n)]
    kwargs = {"context": draw(st.integers(1, 6000)), "window": draw(st.integers(1000, 9000)),
              "ceiling": draw(st.none() | st.integers(1, 3000)),
              "floor": draw(st.none() | st.integers(0, 6000)),
              "target": draw(st.none() | st.integers(0, 6000))}
    return steps, kwargs


@settings(max_examples=400, deadline=None)
@given(cases())
def test_the_quick_answer_is_the_full_one(case: tuple[list[StepBudget], dict[str, Any]]
                                          ) -> None:
    steps, kwargs = case
    assert compute_clamp(steps, **kwargs) == clamp._clamp(steps, **kwargs)


def test_nothing_is_worked_out_for_steps_that_fit(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    full = clamp._clamp

    def counted(*args: Any, **kwargs: Any) -> ClampValues:
        calls.append(1)
        return full(*args, **kwargs)

    monkeypatch.setattr(clamp, "_clamp", counted)
    fitting = [_step(0, 1000, 500), _step(1, 2000, 1000)]
    # 1000 + 0 + 128 + 4000 + 500 and 2000 + 128 + 4000 + 1000 = 7128 <= 8000
    assert compute_clamp(fitting, context=4000, window=8000, ceiling=None,
                         floor=None) == ClampValues()
    assert compute_clamp(fitting, context=4000, window=8000, ceiling=1000,
                         floor=None) == ClampValues()
    assert calls == []
    over = compute_clamp(fitting, context=4000, window=7000, ceiling=None, floor=None)
    assert over.context_after == 7000 - 2000 - 128 - 1000 and calls == [1]
    above = compute_clamp(fitting, context=4000, window=8000, ceiling=800, floor=None)
    assert [c.after for c in above.outputs] == [800] and calls == [1, 1]
    compute_clamp(fitting, context=4000, window=8000, ceiling=None, floor=None, target=3000)
    assert calls == [1, 1, 1]  # a shared target: worked out in full
