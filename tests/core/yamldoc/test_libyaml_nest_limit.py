"""libyaml 0.2.6 (in PyYAML 6.0.4's wheels, November 2026) refuses 1,000 nested flow
collections while its scanner looks ahead, before its parser gives a single event of them:
a pipeline nested that deep was "YAML syntax error: ... exceeded maximum nesting depth"
(BL001) at the 1,000th bracket, where every other reader of ours, and libyaml before, says
"nested deeper than 64 levels; refused" (BL003) at the 65th. ``parse_yaml`` reads such a
text again with PyYAML's Python parser. The test simulates libyaml's error, so it holds
whichever PyYAML is installed (tests/core/yamldoc/test_reader_equivalence.py and
tests/core/contract/test_hostile.py meet the real one with PyYAML 6.0.4)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from budgetlens.source import Position, Range
from budgetlens.yamldoc import parse as yaml_parse
from budgetlens.yamldoc.parse import MAX_DEPTH, parse_yaml


class _NestLimited(yaml.SafeLoader):
    """A parser that stops as libyaml 0.2.6 does on a text nested 1,000 flow levels deep."""

    def get_event(self) -> Any:
        if "[" * 1000 in self.buffer:  # the reader's text
            raise yaml.MarkedYAMLError("while increasing flow level", None,
                                       "exceeded maximum nesting depth", self.get_mark())
        return super().get_event()


@pytest.fixture
def nest_limited(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(yaml_parse, "_LOADER", _NestLimited)


def test_a_text_past_libyaml_s_nesting_limit_is_refused_at_our_own(nest_limited: None) -> None:
    doc, problems = parse_yaml("x: " + "[" * 3000 + "]" * 3000)
    at = 3 + MAX_DEPTH  # "x: ", then the first node at depth 65
    assert doc is None
    assert [(p.code, p.range, p.message) for p in problems] == [
        ("BL003", Range(Position(0, at), Position(0, at)),
         f"nested deeper than {MAX_DEPTH} levels; refused")]


def test_other_syntax_errors_are_not_read_again(nest_limited: None,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """Only that error sends the text to the Python parser: any other is the answer."""
    made: list[str] = []
    real = yaml.SafeLoader.__init__

    def counting(self: Any, stream: Any) -> None:
        made.append(type(self).__name__)
        real(self, stream)
    monkeypatch.setattr(yaml.SafeLoader, "__init__", counting)
    _, problems = parse_yaml("a: [1, 2\nb: 3\n")
    assert [p.code for p in problems] == ["BL001"]
    assert "SafeLoader" not in made
