"""config.json with a number Python cannot read and, after it, a string that never ends (a
file being typed): the scan for unreadable numbers reads the broken string as one token, so it
does not restart at each of its escaped quotes and read on to the end from each (quadratic:
a minute for 40,000 escapes), and the diagnostics are those of the text before it."""

from __future__ import annotations

from budgetlens.contract import config
from budgetlens.contract.config import load_config

HUGE = "1" * 5000
BROKEN = '"' + '\\"' * 5000  # an unterminated string of escaped quotes


def test_an_unterminated_string_is_one_token_to_the_end() -> None:
    for tail in ("", "\\", "abc 123 \\u00"):
        text = '{"x": ' + HUGE + ', "y": ' + BROKEN + tail
        start = text.index(BROKEN)
        token = config._JSON_TOKEN.match(text, start)
        assert token is not None and token.end() == len(text), tail
    # a backslash before a line break ends it there (an escape cannot span lines)
    text = '"ab\\\n' + HUGE
    token = config._JSON_TOKEN.match(text)
    assert token is not None and token.group() == '"ab\\'
    assert config._unreadable_integers(text) == [(len('"ab\\\n'), len(text))]


def test_the_unreadable_number_before_a_broken_string_is_found_once() -> None:
    text = '{"x": ' + HUGE + ', "y": ' + BROKEN
    assert config._unreadable_integers(text) == [(6, 6 + 5000)]
    [d] = load_config("config.json", text).diagnostics
    assert d.code == "BL011" and d.message.startswith("config.json is not valid JSON:")
