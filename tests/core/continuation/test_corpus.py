"""JSONTestSuite (../shared/data/JSONTestSuite/test_parsing, MIT), read in place.

- every ``y_`` file: get_contexts finds it complete and keeps it; every non-blank prefix of
  it yields a ``complete_part`` that parses (the empty / blank prefix holds no JSON value:
  get_contexts says so instead);
- every ``n_`` and ``i_`` file: nothing raises and the result says what is wrong (an error,
  a cut, or text skipped around the value).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from budgetlens import get_contexts
from budgetlens.serialize import to_jsonable

SUITE = Path(__file__).resolve().parents[4] / "shared" / "data" / "JSONTestSuite" / "test_parsing"
if not SUITE.is_dir():  # the tree may be checked out elsewhere than /work/main
    SUITE = Path("/work/shared/data/JSONTestSuite/test_parsing")


def _files(prefix: str) -> list[Path]:
    return sorted(SUITE.glob(f"{prefix}*.json"))


def _decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")


def _balanced(text: str) -> bool:
    """Brackets outside strings nest properly (an independent check for deep texts)."""
    stack: list[str] = []
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            stack.append("]" if ch == "[" else "}")
        elif ch in "]}" and (not stack or stack.pop() != ch):
            return False
    return not stack and not in_string


def test_the_corpus_is_there() -> None:
    assert len(_files("y_")) == 95
    assert len(_files("n_")) == 188
    assert len(_files("i_")) == 35


@pytest.mark.parametrize("path", _files("y_"), ids=lambda p: p.name)
def test_valid_file_and_every_prefix(path: Path) -> None:
    text = path.read_bytes().decode("utf-8")
    whole = get_contexts(text)
    assert whole.is_complete, whole.description
    assert json.loads(whole.complete_part) == json.loads(text)
    for end in range(len(text)):
        prefix = text[:end]
        ctx = get_contexts(prefix)
        if not prefix.strip():
            assert ctx.json_parsing_success is False and ctx.error is not None
            continue
        assert ctx.json_parsing_success, (prefix, ctx.description)
        json.loads(ctx.complete_part)


@pytest.mark.parametrize("path", _files("n_") + _files("i_"), ids=lambda p: p.name)
def test_invalid_or_implementation_defined_file_never_raises(path: Path) -> None:
    text = _decode(path.read_bytes())
    ctx = get_contexts(text)
    says_what = (ctx.error is not None or ctx.cut is not None or bool(ctx.skipped_prefix)
                 or bool(ctx.skipped_suffix) or ctx.is_complete)
    assert says_what
    if path.name.startswith("n_"):
        # an n_ file is never reported as a plain, complete JSON document
        assert not (ctx.is_complete and not ctx.skipped_prefix.strip()
                    and not ctx.skipped_suffix), ctx.description
    if ctx.json_parsing_success and ctx.complete_part:
        try:
            json.loads(ctx.complete_part)
        except RecursionError:  # json.loads itself cannot go 50,000 levels deep
            assert _balanced(ctx.complete_part)
    assert isinstance(to_jsonable(ctx), dict)
