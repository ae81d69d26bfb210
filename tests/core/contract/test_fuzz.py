"""Fuzzing the checker: arbitrary text and arbitrary YAML values never raise, and every
diagnostic points inside its file."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from budgetlens.contract.check import check_pipeline
from budgetlens.contract.plan import clamp_plan
from budgetlens.contract.results import CheckOptions, PipelineReport
from budgetlens.files import DiskFiles
from tests.core.contract.helpers import make_workspace

YAMLISH = st.text(alphabet=list("{}[]:-,'\"!&*#|>?%@`\n \t\r0123456789abcxyz_.~予🚀\\"),
                  max_size=300)
KEYS = st.sampled_from(["settings", "steps", "extends", "max_context_tokens", "id", "name",
                        "type", "call_model", "prompt_key", "user_parts", "template",
                        "max_output_tokens", "max_tokens", "use_history",
                        "max_history_tokens", "budget_safety_margin_tokens",
                        "min_context_tokens", "x"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10, 10**6), st.floats(),
                    st.sampled_from(["call_model", "sys", "{q}", "{", "base.yaml", "../x"]),
                    st.text(max_size=20))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=5)), max_leaves=25)


def _check(root: Path, text: str) -> PipelineReport:
    make_workspace(root, config={"model_context_window": 5000, "model_max_tokens": 100},
                   pipelines={"p.yaml": text, "base.yaml": "settings: {max_context_tokens: 10}\n"},
                   prompts={"sys.txt": "system"})
    path = root / "pipelines" / "p.yaml"
    report = check_pipeline(path, files=DiskFiles(), options=CheckOptions(environ={}))
    lines = {str(path): re.split(r"\r\n|\r|\n", text)}  # LSP's line ends
    for d in report.diagnostics:
        if d.file in lines:
            assert 0 <= d.range.start.line < len(lines[d.file]), d
            assert d.range.start <= d.range.end, d
    clamp_plan(report, files=DiskFiles())
    return report


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(YAMLISH)
def test_arbitrary_text_never_raises(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _check(Path(tmp), text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(KEYS, VALUES, max_size=6))
def test_arbitrary_yaml_values_never_raise(value: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        _check(Path(tmp), yaml.safe_dump(value, allow_unicode=True))


class _Filled:
    """A value that formats as ``base`` does, whatever index or attribute a field takes from
    it (``{x[1]}``, ``{x.y}``): a template's field may name a part of a list or an object,
    and its fixed cost is the field filled with ``base``."""

    def __init__(self, base: object) -> None:
        self.base = base

    def __getitem__(self, key: object) -> _Filled:
        return self

    def __getattr__(self, name: str) -> _Filled:
        return self

    def __format__(self, spec: str) -> str:
        return format(self.base, spec)

    def __str__(self) -> str:
        return str(self.base)

    def __repr__(self) -> str:
        return repr(self.base)


class _Empty(dict[str, _Filled]):
    def __missing__(self, key: str) -> _Filled:
        return _Filled("")


class _Zero(dict[str, _Filled]):
    def __missing__(self, key: str) -> _Filled:
        return _Filled(0)


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=list("{}ab_1 \n予🚀.!:[]"), max_size=60))
@example("{_[1]}")  # an index of the empty string raised IndexError in the reference
@example("{_[:]}")
@example("{a.b!r:>4}")
def test_a_valid_template_empties_like_python_format(text: str) -> None:
    from budgetlens.contract.template import parse_template

    parsed = parse_template(text)
    if not parsed.problems:
        # the independent reference: Python's own format with every field empty
        try:
            reference = text.format_map(_Empty())
        except ValueError:
            # a spec for numbers only ({n:5d}): valid, Python formats it for a number
            text.format_map(_Zero())
        else:
            assert reference == parsed.emptied
    for p in parsed.problems:
        assert 0 <= p.start < p.end <= len(text)


def test_a_format_spec_no_value_accepts_is_a_template_problem() -> None:
    from budgetlens.contract.template import parse_template

    # '{q::}': str.format raises "Invalid format specifier" for any value
    assert [p.message for p in parse_template("{予::}").problems] == [
        "invalid placeholder '{予::}': invalid format spec ':'; write '{{' and '}}' for"
        " literal braces"]
    # a spec for numbers is accepted (the value may be a number at run time)
    assert not parse_template("{n:5d}").problems
