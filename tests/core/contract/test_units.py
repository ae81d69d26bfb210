"""Unit tests of the contract's building blocks: templates, positioned YAML, files, history,
policy, config."""

from __future__ import annotations

from pathlib import Path

import pytest

from budgetlens.assembly.history import trim_history
from budgetlens.contract.config import load_config
from budgetlens.contract.policy import Policy, resolve_policy
from budgetlens.contract.template import parse_template
from budgetlens.files import (
    DiskFiles,
    FileMissing,
    FileTooLarge,
    NotAFile,
    NotText,
    OutsideRoot,
    OverlayFiles,
)
from budgetlens.source import Position, Range
from budgetlens.yamldoc.parse import parse_yaml
from tests.core.contract.helpers import tokens

# ------------------------------------------------------------------------- templates


@pytest.mark.parametrize(("template", "emptied", "names"), [
    ("Hello {name}!", "Hello !", ["name"]),
    ("{a}{b}", "", ["a", "b"]),
    ("JSON: {{\"k\": {value}}}", 'JSON: {"k": }', ["value"]),
    ("{{literal}}", "{literal}", []),
    ("{{{x}}}", "{}", ["x"]),
    ("no placeholders", "no placeholders", []),
    ("", "", []),
    ("émoji 🚀 {ok}", "émoji 🚀 ", ["ok"]),
])
def test_templates_are_emptied_and_unescaped(template: str, emptied: str,
                                             names: list[str]) -> None:
    parsed = parse_template(template)
    assert parsed.problems == ()
    assert parsed.emptied == emptied
    assert [p.name for p in parsed.placeholders] == names


@pytest.mark.parametrize(("template", "start", "end", "word"), [
    ("Answer {question", 7, 8, "unclosed"),
    ("a { b {c}", 2, 3, "unclosed"),
    ("end }", 4, 5, "single '}'"),
    ("{not valid}", 0, 11, "invalid placeholder"),
    ("{}", 0, 2, "invalid placeholder"),
    ("{0}", 0, 3, "invalid placeholder"),
])
def test_template_errors_are_located(template: str, start: int, end: int, word: str) -> None:
    (problem,) = parse_template(template).problems
    assert (problem.start, problem.end) == (start, end)
    assert word in problem.message


def test_the_fixed_cost_is_the_count_of_the_emptied_text() -> None:
    parsed = parse_template("Context:\n{context}\n\nQuestion: {question}\n")
    assert tokens(parsed.emptied) == tokens("Context:\n\n\nQuestion: \n")


# ------------------------------------------------------------------------ YAML source


def test_yaml_positions_are_code_points_of_keys_and_values() -> None:
    text = "名前: 🚀\nsettings:\n  max_context_tokens: 4096  # c\n  list: [1, 22]\n"
    doc, problems = parse_yaml(text)
    assert problems == [] and doc is not None
    assert doc.value_range(("名前",)) == Range(Position(0, 4), Position(0, 5))
    assert doc.key_range(("settings", "max_context_tokens")) == Range(Position(2, 2),
                                                                      Position(2, 20))
    assert doc.value_range(("settings", "max_context_tokens")) == Range(Position(2, 22),
                                                                        Position(2, 26))
    assert doc.value_range(("settings", "list", 1)) == Range(Position(3, 12), Position(3, 14))
    assert doc.node(("settings", "list")) == [1, 22]


def test_yaml_positions_survive_crlf_and_a_bom() -> None:
    doc, _ = parse_yaml("\ufeffa: 1\r\nb: 22\r\n")
    assert doc is not None
    assert doc.value_range(("b",)) == Range(Position(1, 3), Position(1, 5))


def test_yaml_merge_keys_and_aliases_are_followed() -> None:
    doc, problems = parse_yaml("base: &b {x: 1, y: 2}\nchild:\n  <<: *b\n  y: 3\n")
    assert problems == [] and doc is not None
    assert doc.value == {"base": {"x": 1, "y": 2}, "child": {"y": 3, "x": 1}}


def test_duplicate_keys_warn_and_the_last_wins() -> None:
    doc, problems = parse_yaml("a: 1\na: 2\n")
    assert doc is not None and doc.value == {"a": 2}
    assert [(p.code, p.fatal) for p in problems] == [("BL006", False)]
    assert doc.value_range(("a",)) == Range(Position(1, 3), Position(1, 4))


def test_yaml_scalars_keep_their_types() -> None:
    doc, _ = parse_yaml("i: 7\nf: 1.5\nb: true\nn: ~\ns: '7'\nd: 2024-01-02\n")
    assert doc is not None
    assert doc.value == {"i": 7, "f": 1.5, "b": True, "n": None, "s": "7", "d": "2024-01-02"}


# ----------------------------------------------------------------------------- files


def test_disk_files_explain_why_a_file_cannot_be_read(tmp_path: Path) -> None:
    files = DiskFiles(tmp_path, max_bytes=10)
    (tmp_path / "ok.txt").write_bytes(b"\xef\xbb\xbfhi")
    assert files.read_text(tmp_path / "ok.txt") == "hi"
    with pytest.raises(FileMissing):
        files.read_text(tmp_path / "none.txt")
    with pytest.raises(NotAFile):
        files.read_text(tmp_path)
    (tmp_path / "big.txt").write_text("x" * 11)
    with pytest.raises(FileTooLarge):
        files.read_text(tmp_path / "big.txt")
    (tmp_path / "bin").write_bytes(b"a\x00b")
    with pytest.raises(NotText, match="binary"):
        files.read_text(tmp_path / "bin")
    with pytest.raises(OutsideRoot):
        files.read_text(tmp_path / ".." / "x.txt")


def test_fingerprints_change_with_the_file(tmp_path: Path) -> None:
    files = DiskFiles()
    path = tmp_path / "a.txt"
    assert files.fingerprint(path) == "missing"
    path.write_text("one")
    first = files.fingerprint(path)
    path.write_text("three")
    assert files.fingerprint(path) != first


def test_overlay_beats_disk_and_is_fingerprinted_by_content(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("disk")
    disk = DiskFiles()
    overlay = OverlayFiles(disk, {tmp_path / "a.txt": "buffer"})
    assert overlay.read_text(tmp_path / "a.txt") == "buffer"
    assert overlay.read_text(tmp_path / "sub" / ".." / "a.txt") == "buffer"
    same = OverlayFiles(disk, {str(tmp_path / "a.txt"): "buffer"})
    other = OverlayFiles(disk, {tmp_path / "a.txt": "changed"})
    assert overlay.fingerprint(tmp_path / "a.txt") == same.fingerprint(tmp_path / "a.txt")
    assert overlay.fingerprint(tmp_path / "a.txt") != other.fingerprint(tmp_path / "a.txt")
    assert OverlayFiles(disk, {}).read_text(tmp_path / "a.txt") == "disk"


# --------------------------------------------------------------------------- history


def test_trim_history_drops_the_oldest_turns_until_it_fits() -> None:
    turns = [{"role": "user", "content": "one two three four"},
             {"role": "assistant", "content": "five six"},
             {"role": "user", "content": "seven"}]
    costs = [tokens(t["content"]) for t in turns]
    budget = costs[1] + costs[2]
    trim = trim_history(turns, budget, tokens)
    assert trim.dropped == turns[:1] and trim.kept == turns[1:]
    assert (trim.tokens_before, trim.tokens_after) == (sum(costs), costs[1] + costs[2])
    assert trim.trace() == {"budget": budget, "turns_before": 3, "turns_after": 2,
                            "turns_dropped": 1, "tokens_before": sum(costs),
                            "tokens_after": budget, "tokens_dropped": costs[0]}


def test_trim_history_keeps_everything_that_fits_and_drops_all_at_zero() -> None:
    turns = ["a b c", "d e"]
    assert trim_history(turns, 1000, tokens).dropped == []
    zero = trim_history(turns, 0, tokens)
    assert zero.kept == [] and zero.dropped == turns and zero.tokens_after == 0


def test_trim_history_never_cuts_a_turn() -> None:
    turns = ["x " * 50, "y"]
    trim = trim_history(turns, tokens("x " * 50) - 1, tokens)
    assert trim.kept == ["y"]


# ---------------------------------------------------------------------- policy/config


def test_policy_override_beats_env_beats_config() -> None:
    env = {"PIPELINE_LIMITS_POLICY": "fail_fast"}
    assert resolve_policy(override="auto_clamp", environ=env, development=True).policy \
        is Policy.AUTO_CLAMP
    assert resolve_policy(override=None, environ=env, development=False).policy \
        is Policy.FAIL_FAST
    choice = resolve_policy(override="nope", environ={}, development=True)
    assert choice.policy is Policy.FAIL_FAST and choice.problem is not None


def test_config_accepts_the_developement_misspelling_and_keeps_unknown_keys() -> None:
    loaded = load_config("c.json", '{"model_context_window": 10, "developement": false,'
                                   ' "custom": [1]}')
    assert loaded.config is not None and loaded.diagnostics == ()
    assert loaded.config.development is False
    assert loaded.config.model_extra == {"custom": [1]}
    assert loaded.config.prompts_dir == "prompts"
    assert loaded.config.format_overhead_tokens == 32


def test_config_json_syntax_error_is_located() -> None:
    loaded = load_config("c.json", '{\n  "model_context_window": 10,\n}')
    (diag,) = loaded.diagnostics
    assert diag.code == "BL011" and diag.range.start.line == 2


SAMPLES = [
    "名前: 🚀\nsettings:\n  max_context_tokens: 4096  # c\n  list: [1, 22]\n",
    "\ufeffa: 1\r\nb: {x: 'q', y: \"é\"}\r\n",
    "steps:\n  - id: a\n    t: |\n      line {x}\n      more\n    n: 5\n",
    "base: &b {x: 1}\nuse:\n  <<: *b\n  y: [*b, *b]\n",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_pure_python_and_libyaml_composers_agree(text: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    from budgetlens.yamldoc import parse as yaml_source

    fast, fast_problems = parse_yaml(text)
    monkeypatch.setattr(yaml_source, "_LOADER", yaml.SafeLoader)
    slow, slow_problems = parse_yaml(text)
    assert fast is not None and slow is not None
    assert fast.value == slow.value
    assert dict(fast.spans) == dict(slow.spans)
    assert fast_problems == slow_problems


def test_pure_python_composer_refuses_tags_and_bombs(monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    from budgetlens.yamldoc import parse as yaml_source

    monkeypatch.setattr(yaml_source, "_LOADER", yaml.SafeLoader)
    assert parse_yaml("a: !!python/object/apply:os.system [x]")[1][0].code == "BL002"
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n"
        for p, n in zip("abcdefg", "bcdefgh", strict=True))
    assert parse_yaml(bomb)[1][0].code == "BL003"
