"""The one-pass reader's decimal shortcut: an untagged plain ``[1-9][0-9]*`` (or ``0``) is
an int without asking the resolver. Expected values come from PyYAML itself
(``yaml.load`` with the same loader), for the shortcut's texts and the ones next to it that
must not take it (octal, signs, underscores, floats, times, long numbers)."""

from __future__ import annotations

import random
from typing import Any

import pytest
import yaml

from budgetlens.yamldoc import simple
from budgetlens.yamldoc.compose import resolver_memo
from budgetlens.yamldoc.parse import parse_yaml

NEIGHBOURS = ["0", "7", "10", "0123", "00", "08", "0o7", "+1", "-1", "1_000", "1.0", "1e3",
              "0x1f", "1:20", "190:20:30", "2024-01-01", "123456789012345678",
              "1234567890123456789", "9" * 40, "٣", "1 2", "12abc"]
LOADERS = sorted(simple._YAML11_RESOLVERS, key=lambda c: c.__name__)


def _texts() -> list[str]:
    rng = random.Random(12)
    return NEIGHBOURS + [str(rng.randint(0, 10 ** rng.randint(1, 19))) for _ in range(500)]


@pytest.mark.parametrize("loader", LOADERS, ids=lambda c: c.__name__)
def test_values_are_pyyamls(loader: Any) -> None:
    for text in _texts():
        expected = yaml.load(f"v: {text}\n", Loader=loader)["v"]
        doc, problems = parse_yaml(f"v: {text}\n")
        assert not problems and doc is not None
        got = doc.value["v"]
        if isinstance(expected, (int, float, str)) and not isinstance(expected, bool):
            assert got == expected and type(got) is type(expected), text
        shortcut = simple._DECIMAL.fullmatch(text) is not None
        assert shortcut == (text.isascii() and text.isdigit() and len(text) <= 18
                            and (text == "0" or not text.startswith("0"))), text


def test_the_shortcut_skips_the_resolver(monkeypatch: pytest.MonkeyPatch) -> None:
    loader = yaml.SafeLoader("")
    calls: list[str] = []
    resolve = simple.resolve_tag

    def counting(*args: Any) -> str:
        calls.append(args[2])
        return resolve(*args)

    monkeypatch.setattr(simple, "resolve_tag", counting)
    memo = resolver_memo(loader)
    memo.clear()
    assert simple._plain_value(loader, memo, {}, "4096") == 4096
    assert calls == []
    assert simple._plain_value(loader, memo, {}, "0777") == 511  # octal: resolved
    assert calls == ["0777"]
