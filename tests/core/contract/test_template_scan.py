"""``parse_template`` on a text of many unclosed '{' before one '}' (a template being typed,
or an adversary's): the '}' is searched for once, not read to from each '{' (quadratic: 4 s
at 640,000 characters). The problems and placeholders are as before; counted on a str that
counts what its ``find`` reads."""

from __future__ import annotations

from budgetlens.contract.template import parse_template


class _Counting(str):
    read = 0

    def find(self, sub: str, *args: int) -> int:  # type: ignore[override]
        at = str.find(self, sub, *args)
        start = args[0] if args else 0
        _Counting.read += (len(self) if at == -1 else at + len(sub)) - start
        return at


def test_unclosed_braces_before_one_close_are_read_once() -> None:
    n = 2000
    text = _Counting("{a" * n + "} and {b}")
    _Counting.read = 0
    parsed = parse_template(text)
    assert _Counting.read <= 4 * len(text)  # each '{' reads to the next '{', '}' once
    assert [p.start for p in parsed.problems] == [2 * i for i in range(n - 1)]
    assert {p.message.split(":")[0] for p in parsed.problems} == {"unclosed '{'"}
    assert [(p.name, p.start, p.end) for p in parsed.placeholders] == [
        ("a", 2 * (n - 1), 2 * n + 1), ("b", 2 * n + 6, 2 * n + 9)]


def test_a_close_passed_is_searched_for_again() -> None:
    parsed = parse_template("{x} {y {z}")
    assert [(p.name, p.start) for p in parsed.placeholders] == [("x", 0), ("z", 7)]
    assert [p.start for p in parsed.problems] == [4]
    assert parse_template("{x}}").problems[0].start == 3
    assert parse_template("{ {").problems and not parse_template("{ {").placeholders
