"""``budgetlens contexts`` on a cut reply that is one flat object of 80,000 keys (issue 35):
the renderer collapses a long run of object members not shown in full, keeping the first
and last ``OBJECT_KEEP`` (5) of it, as it collapses array items; before, every key was
listed and the default output was about 1.3 MB."""

from __future__ import annotations

from pathlib import Path

import pytest

from budgetlens import get_contexts
from budgetlens_cli.main import main

KEYS = 80_000


def _wide_reply() -> str:
    """``{"key00000": "value 0", ..., "key79999": "val`` (cut inside the last string)."""
    members = [f'"key{i:05d}": "value {i}"' for i in range(KEYS)]
    return "{" + ", ".join(members)[:-len('ue 79999"')]


@pytest.fixture
def reply(tmp_path: Path) -> Path:
    path = tmp_path / "wide.json"
    path.write_text(_wide_reply(), "utf-8")
    return path


def test_default_output_of_a_wide_object_is_small(
        reply: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["contexts", str(reply)]) == 0
    out = capsys.readouterr().out
    assert len(out.encode("utf-8")) < 16_000
    lines = out.splitlines()
    # the first members stand as hints; the budget (1,000) shows the last ones in full
    assert '  "key00000": <string: 7 chars>,' in lines
    assert '  "key00004": <string: 7 chars>,' in lines
    assert '  "key00005": <string: 7 chars>,' not in lines
    [gap] = [line for line in lines if line.endswith(" keys not shown>,")]
    # the members in full: those before the cut, from its end, while the budget lasts
    full = [line for line in lines if line.startswith('  "key') and '": "value ' in line]
    assert full and full[-1] == '  "key79998": "value 79998",'
    hinted = [line for line in lines if line.startswith('  "key') and ": <string" in line]
    assert len(hinted) == 10  # five at each end of the run of hints
    # every member before the cut is either printed or counted in the gap
    assert int(gap.strip()[1:].split(" ")[0].replace(",", "")) \
        == KEYS - 1 - len(full) - len(hinted)
    assert '  "key79999": "val<<<CUT>>>' in lines


def test_the_library_gives_the_same_text(reply: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    ctx = get_contexts(reply.read_text("utf-8"))
    assert main(["contexts", str(reply)]) == 0
    assert ctx.hierarchy_context_for_prompt in capsys.readouterr().out
    assert " keys not shown>," in ctx.hierarchy_context_for_prompt
