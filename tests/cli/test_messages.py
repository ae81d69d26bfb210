"""What a user reads: every message of the check, clamp and tokens commands says what is
wrong, where, and what to do, and nothing is refused or accepted silently.

Expected texts are written out by hand; token counts come from the plain tokenizer on texts
written in the test (``tokens``), guarded where a literal number depends on them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from budgetlens import codes
from budgetlens.continuation.contexts import get_contexts
from budgetlens.contract.template import parse_template
from budgetlens.files import BadPath, DiskFiles
from budgetlens.tokens.core import get_tokenizer
from budgetlens.yamldoc.parse import parse_yaml
from budgetlens_cli.main import main
from budgetlens_lsp.features.json_documents import json_diagnostic
from tests.core.contract.helpers import check, make_workspace, only

CL100K = get_tokenizer("cl100k_base")
O200K = get_tokenizer("o200k_base")

# window 1000; "hello" is 1 token; no format overhead: the numbers stay small
CONFIG = {"model_context_window": 1000, "model_max_tokens": 100, "format_overhead_tokens": 0,
          "development": True}
FITS = ("settings:\n  max_context_tokens: 500\n"
        "steps:\n  - id: answer\n    type: call_model\n    prompt_key: sys\n")
OVER = ("settings:\n  max_context_tokens: 900\n"
        "steps:\n  - id: answer\n    type: call_model\n    prompt_key: sys\n")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    monkeypatch.delenv("APP_DEVELOPMENT", raising=False)
    monkeypatch.chdir(tmp_path)
    assert CL100K.count("hello") == 1


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _ws(pipelines: dict[str, str], config: dict[str, Any] | None = None,
        prompts: dict[str, str] | None = None) -> Path:
    return make_workspace(Path("ws"), config=CONFIG if config is None else config,
                          pipelines=pipelines,
                          prompts={"sys.txt": "hello"} if prompts is None else prompts)


# ------------------------------------------------------------------ templates (BL043)
def test_a_placeholder_named_in_any_script_is_accepted_and_costs_nothing(
        capsys: pytest.CaptureFixture[str]) -> None:
    _ws({"p.yaml": FITS + "    user_parts:\n      template: '質問: {質問}'\n"})
    code, out, _ = _run(capsys, "check", "ws", "--format", "json")
    assert code == 0
    doc = json.loads(out)
    assert doc["diagnostics"] == []
    assert CL100K.count("質問: ") == 5
    assert doc["steps"][0]["budget"]["template"] == 5
    assert [p.name for p in parse_template("{質問} {user.name} {items[0]}").placeholders] == [
        "質問", "user", "items"]


@pytest.mark.parametrize(("template", "message"), [
    ("{0}", "invalid placeholder '{0}': a positional field: the template is filled by name,"
            " write {name} with a Python identifier; write '{{' and '}}' for literal braces"),
    ("{a b}", "invalid placeholder '{a b}': 'a b' is not a Python identifier (letters of any"
              " script, digits and '_', not starting with a digit); write '{{' and '}}' for"
              " literal braces"),
    ("{a!x}", "invalid placeholder '{a!x}': unknown conversion '!x' (use !r, !s or !a); write"
              " '{{' and '}}' for literal braces"),
])
def test_a_template_field_str_format_cannot_fill_by_name_is_an_error(
        template: str, message: str) -> None:
    (problem,) = parse_template(template).problems
    assert problem.message == message


def test_conversion_and_format_spec_count_what_they_add() -> None:
    assert parse_template("[{score:>6}] {name!r}").emptied == "[      ] ''"


# ---------------------------------------------------------------------------- tokens
def test_tokens_counts_with_the_workspace_tokenizer_and_says_which(
        capsys: pytest.CaptureFixture[str]) -> None:
    text = "Résumé du rapport trimestriel: 東京の天気は晴れです。"
    assert (CL100K.count(text), O200K.count(text)) == (20, 16)
    _ws({"p.yaml": FITS}, config={**CONFIG, "tokenizer": "o200k_base"},
        prompts={"sys.txt": text})
    code, out, _ = _run(capsys, "tokens", "ws/prompts/sys.txt")
    assert code == 0
    assert out == "16  ws/prompts/sys.txt\ntokenizer: o200k_base (tokenizer of ws/config.json)\n"
    code, out, _ = _run(capsys, "tokens", "ws/prompts/sys.txt", "--tokenizer", "cl100k_base")
    assert out == "20  ws/prompts/sys.txt\ntokenizer: cl100k_base (--tokenizer)\n"
    code, out, _ = _run(capsys, "tokens", "ws/prompts/sys.txt", "--format", "json")
    assert json.loads(out) == {"tokenizer": "o200k_base", "total": 16, "files": [
        {"file": "ws/prompts/sys.txt", "tokens": 16, "tokenizer": "o200k_base",
         "tokenizer_source": "ws/config.json"}]}


def test_tokens_without_a_config_says_it_used_the_default(
        capsys: pytest.CaptureFixture[str]) -> None:
    Path("note.txt").write_text("hello", "utf-8")
    code, out, _ = _run(capsys, "tokens", "note.txt")
    assert code == 0
    assert out == ("1  note.txt\n"
                   "tokenizer: cl100k_base (default: no tokenizer in a config.json at or above)\n")


def test_tokens_with_a_broken_config_tokenizer_is_an_error_naming_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    _ws({"p.yaml": FITS}, config={**CONFIG, "tokenizer": "no-such-encoding"})
    code, _, err = _run(capsys, "tokens", "ws/prompts/sys.txt")
    assert code == 2
    assert err == ("budgetlens: error: ws/config.json: tokenizer: unknown tokenizer"
                   " 'no-such-encoding': use cl100k_base or o200k_base, a model name such as"
                   " 'gpt-4o', or the path of a tokenizer.json\n")


# ------------------------------------------------------------------ YAML limits (BL003)
def test_a_long_plain_list_is_not_an_alias_bomb() -> None:
    doc, problems = parse_yaml("items:\n" + "".join(f"  - item{i}\n" for i in range(20_001)))
    assert problems == [] and doc is not None
    assert len(doc.value["items"]) == 20_001


def test_values_repeated_through_aliases_are_capped() -> None:
    # an anchored list of 3 items is 4 values; 5000 aliases repeat 20,000 of them
    head = "a: &a [1, 2, 3]\nb: ["
    doc, problems = parse_yaml(head + ", ".join(["*a"] * 5000) + "]\n")
    assert problems == [] and doc is not None
    doc, problems = parse_yaml(head + ", ".join(["*a"] * 5001) + "]\n")
    assert doc is None
    assert [(p.code, p.message) for p in problems] == [
        ("BL003", "document expands to more than 20000 values through aliases (an alias"
                  " bomb?); refused")]


def test_a_4000_step_pipeline_is_checked_and_still_checked_after_clamp_write(
        capsys: pytest.CaptureFixture[str]) -> None:
    steps = "".join(f"  - {{id: s{i}, type: call_model, prompt_key: sys, max_output_tokens: 10,"
                    f" use_history: false}}\n" for i in range(4000))
    _ws({"p.yaml": "settings:\n  max_context_tokens: 999\nsteps:\n" + steps})
    # 1 + 999 + 10 + 128 = 1138 > 1000: the clamp lowers max_context_tokens to 861
    code, out, _ = _run(capsys, "check", "ws", "--no-table")
    assert code == 1
    assert "BL003" not in out
    assert out.splitlines()[-1] == ("1 pipeline, 4000 call_model steps (4000 not fitting):"
                                    " 4000 errors, 0 warnings")
    code, out, _ = _run(capsys, "clamp", "ws", "--write")
    assert code == 0
    assert out.splitlines()[-1] == "1 change applied in 1 file"
    code, out, _ = _run(capsys, "check", "ws", "--no-table")
    assert code == 0
    assert out == "1 pipeline, 4000 call_model steps (0 not fitting): 0 errors, 0 warnings\n"


# ---------------------------------------------------------------------------- extends
def _chain(length: int) -> dict[str, str]:
    files = {f"p{i:02}.yaml": f"extends: p{i + 1:02}.yaml\n" for i in range(1, length)}
    files[f"p{length:02}.yaml"] = FITS
    return files


def test_an_extends_chain_of_32_files_is_accepted() -> None:
    _ws(_chain(32))
    report = check(Path("ws/pipelines/p01.yaml"))
    assert report.diagnostics == []
    assert len(report.chain) == 32


def test_an_extends_chain_of_33_files_is_refused_at_the_32nd_and_at_the_pipeline() -> None:
    _ws(_chain(33))
    report = check(Path("ws/pipelines/p01.yaml"))
    message = ("extends chain longer than 32 files (ws/pipelines/p01.yaml and its parents):"
               " shorten the chain")
    assert [(d.file, d.range.start.line, d.range.start.character, d.code, d.message)
            for d in report.diagnostics] == [
        ("ws/pipelines/p01.yaml", 0, 9, "BL021", message),
        ("ws/pipelines/p32.yaml", 0, 9, "BL021", message)]


def test_an_empty_extends_is_an_error_at_the_value() -> None:
    _ws({"p.yaml": 'extends: ""\n' + FITS})
    diag = only(check(Path("ws/pipelines/p.yaml")), "BL020")
    assert diag.message == ("extends is empty: name the parent pipeline file (relative to this"
                            " file), or remove the key")
    assert (diag.range.start.line, diag.range.start.character, diag.range.end.character) == (
        0, 9, 11)


# --------------------------------------------------------------------------- NUL bytes
def test_a_nul_byte_in_a_prompt_key_is_named_as_such() -> None:
    _ws({"p.yaml": FITS.replace("prompt_key: sys", 'prompt_key: "sy\\0s"')})
    diag = only(check(Path("ws/pipelines/p.yaml")), "BL041")
    assert diag.message == ("prompt file 'ws/prompts/sy\\x00s.txt' of step 'answer' cannot be"
                            " used: the path contains a NUL byte")


def test_a_nul_byte_in_extends_is_named_as_such() -> None:
    _ws({"p.yaml": 'extends: "base\\0.yaml"\n'})
    diag = only(check(Path("ws/pipelines/p.yaml")), "BL020")
    assert diag.message == "extends 'base\\x00.yaml': the path contains a NUL byte"


def test_reading_a_path_with_a_nul_byte_says_so() -> None:
    with pytest.raises(BadPath) as info:
        DiskFiles(root=".").read_text(Path("a\0b.txt"))
    assert str(info.value) == "'a\\x00b.txt': the path contains a NUL byte"


# ---------------------------------------------------------------------------- clamp
def test_clamp_that_can_change_nothing_says_why(capsys: pytest.CaptureFixture[str]) -> None:
    _ws({"base.yaml": "settings:\n  max_context_tokens: '500'\n"
                      "steps:\n  - {id: answer, type: call_model, prompt_key: sys}\n",
         "a.yaml": "extends: base.yaml\n", "b.yaml": "extends: base.yaml\n"})
    code, out, _ = _run(capsys, "clamp", "ws")
    assert code == 1
    assert out == (
        "0 changes planned in 0 files\n"
        "1 error the clamp cannot fix (it only lowers budget numbers):\n"
        "  ws/pipelines/base.yaml:2:23: error[BL030] settings.max_context_tokens: expected an"
        " integer, got the string '500' (remove the quotes)\n"
        "  (and 2 pipelines extending a parent with these errors: ws/pipelines/a.yaml,"
        " ws/pipelines/b.yaml)\n")


def test_clamp_of_a_step_that_can_never_fit_names_it(
        capsys: pytest.CaptureFixture[str]) -> None:
    _ws({"p.yaml": OVER}, prompts={"sys.txt": "word " * 2000})
    code, out, _ = _run(capsys, "clamp", "ws")
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "0 changes planned in 0 files"
    assert lines[1] == "1 error the clamp cannot fix (it only lowers budget numbers):"
    assert lines[2].startswith("  ws/pipelines/p.yaml:4:9: error[BL052] step 'answer' cannot"
                               " fit the window of 1000 tokens")


# ------------------------------------------------------------------ text output (check)
def test_check_without_a_path_checks_the_current_folder(
        capsys: pytest.CaptureFixture[str]) -> None:
    _ws({"p.yaml": FITS})
    os.chdir("ws")
    code, out, _ = _run(capsys, "check", "--no-table")
    assert (code, out) == (0, "1 pipeline, 1 call_model step (0 not fitting): 0 errors,"
                              " 0 warnings\n")


def test_check_dot_inside_the_pipelines_folder_checks_its_pipelines(
        capsys: pytest.CaptureFixture[str]) -> None:
    _ws({"p.yaml": FITS, "q.yaml": OVER})
    os.chdir("ws/pipelines")
    code, out, _ = _run(capsys, "check", ".", "--no-table")
    assert code == 1
    assert out.startswith("q.yaml:4:9: error[BL050] step 'answer' does not fit")
    assert out.splitlines()[-1] == ("2 pipelines, 2 call_model steps (1 not fitting): 1 error,"
                                    " 0 warnings")


def test_check_in_a_folder_of_a_workspace_without_pipelines_says_where_they_are(
        capsys: pytest.CaptureFixture[str]) -> None:
    _ws({"p.yaml": FITS})
    os.chdir("ws/prompts")
    code, _, err = _run(capsys, "check", ".")
    assert code == 2
    assert err == ("budgetlens: error: .: no pipelines/*.yaml found under this folder; its"
                   " workspace is ..: run `budgetlens check ..`\n")


def test_a_violation_lists_every_term_defaults_included_and_the_clamp_hint(
        capsys: pytest.CaptureFixture[str]) -> None:
    config = {k: v for k, v in CONFIG.items() if k != "format_overhead_tokens"}
    _ws({"p.yaml": OVER}, config=config)
    # 1 + 32 (default overhead) + 900 + 100 + 128 (default margin) = 1161 > 1000
    code, out, _ = _run(capsys, "check", "ws")
    assert code == 1
    assert out == (
        "ws/pipelines/p.yaml:4:9: error[BL050] step 'answer' does not fit the context window:"
        " fixed 33 (system prompt 1 + template 0 + format overhead 32) + history 0 + context"
        " 900 + output 100 + margin 128 = 1161 > 1000 (over by 161) [fail_fast]\n"
        "    4 |   - id: answer\n"
        "      |         ^^^^^^\n"
        "      = system_prompt: 1 at ws/prompts/sys.txt:1:1\n"
        "      = format_overhead: 32 (default)\n"
        "      = context: 900 at ws/pipelines/p.yaml:2:23\n"
        "      = output: 100 at ws/config.json:3:23\n"
        "      = margin: 128 (default)\n"
        "      = window: 1000 at ws/config.json:2:27\n"
        "      = help: `budgetlens clamp --diff ws/pipelines/p.yaml` shows the clamp plan,"
        " `--write` applies it\n"
        "\n"
        "ws/pipelines/p.yaml: window 1000, policy fail_fast (config development), tokenizer"
        " cl100k_base\n"
        "  step       fixed   history   context    output    margin     total    window"
        "  headroom  fits\n"
        "  answer        33         0       900       100       128      1161      1000"
        "      -161  NO\n"
        "\n"
        "1 pipeline, 1 call_model step (1 not fitting): 1 error, 0 warnings\n")


def test_a_step_with_an_unknown_term_shows_no_headroom_next_to_no(
        capsys: pytest.CaptureFixture[str]) -> None:
    config = {k: v for k, v in CONFIG.items() if k != "model_max_tokens"}
    _ws({"p.yaml": FITS}, config=config)
    code, out, _ = _run(capsys, "check", "ws")
    assert code == 1
    rows = out.splitlines()
    i = rows.index("  step       fixed   history   context    output    margin     total"
                   "    window  headroom  fits")
    assert rows[i + 1] == ("  answer         1         0       500         ?       128"
                           "         ?      1000         ?  NO")


def test_a_parent_error_is_reported_once_and_each_child_points_to_it_in_one_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    _ws({"base.yaml": "settings:\n  max_context_tokens: -5\n"
                      "steps:\n  - {id: answer, type: call_model, prompt_key: sys}\n",
         "a.yaml": "extends: base.yaml\n", "b.yaml": "extends: base.yaml\n"})
    code, out, _ = _run(capsys, "check", "ws", "--no-table")
    assert code == 1
    assert out == (
        "ws/pipelines/a.yaml:1:10: error[BL023] parent pipeline ws/pipelines/base.yaml has"
        " errors (see ws/pipelines/base.yaml:2:23)\n"
        "ws/pipelines/base.yaml:2:23: error[BL030] settings.max_context_tokens: input should be"
        " greater than 0 (got -5)\n"
        "    2 |   max_context_tokens: -5\n"
        "      |                       ^^\n"
        "ws/pipelines/b.yaml:1:10: error[BL023] parent pipeline ws/pipelines/base.yaml has"
        " errors (see ws/pipelines/base.yaml:2:23)\n"
        "\n"
        "3 pipelines, 3 call_model steps (3 not fitting): 1 error, 0 warnings; 2 pipelines"
        " extend a parent with errors\n")


def test_a_quoted_number_says_to_remove_the_quotes(capsys: pytest.CaptureFixture[str]) -> None:
    _ws({"p.yaml": FITS + "    max_output_tokens: '512'\n    use_history: 'true'\n"},
        config={**CONFIG, "model_max_tokens": "100"})
    code, out, _ = _run(capsys, "check", "ws", "--format", "json")
    assert code == 1
    assert [(d["file"], d["code"], d["message"], d["step"])
            for d in json.loads(out)["diagnostics"]] == [
        ("ws/pipelines/p.yaml", "BL005", "steps[0].max_output_tokens: expected an integer, got"
         " the string '512' (remove the quotes)", "answer"),
        ("ws/pipelines/p.yaml", "BL005", "steps[0].use_history: expected a boolean, got the"
         " string 'true' (remove the quotes)", "answer"),
        ("ws/config.json", "BL013", "config.json model_max_tokens: expected an integer, got the"
         " string '100' (remove the quotes)", None)]


def test_a_wrong_value_in_the_fourth_step_names_the_step(
        capsys: pytest.CaptureFixture[str]) -> None:
    steps = "".join(f"  - {{id: s{i}, type: call_model, prompt_key: sys}}\n" for i in range(3))
    _ws({"p.yaml": "settings:\n  max_context_tokens: 500\nsteps:\n" + steps
         + "  - {type: call_model, prompt_key: sys, max_output_tokens: lots}\n"})
    code, out, _ = _run(capsys, "check", "ws", "--format", "json")
    assert code == 1
    (diag,) = json.loads(out)["diagnostics"]
    assert (diag["code"], diag["step"], diag["message"]) == (
        "BL005", "#3", "steps[3].max_output_tokens: expected an integer, got the string 'lots'")


# ------------------------------------------------------------- JSON and SARIF provenance
def _over_workspace() -> None:
    _ws({"base.yaml": "settings:\n  max_context_tokens: 900\n  budget_safety_margin_tokens: 50\n"
                      "steps:\n  - id: answer\n    type: call_model\n    prompt_key: sys\n",
         "child.yaml": "extends: base.yaml\nsettings:\n  max_context_tokens: 950\n"})


def _loc(file: str, line: int, start: int, end: int) -> dict[str, Any]:
    return {"file": file, "range": {"start": {"line": line, "character": start},
                                    "end": {"line": line, "character": end}}}


def test_json_carries_each_terms_value_and_location(
        capsys: pytest.CaptureFixture[str]) -> None:
    _over_workspace()
    code, out, _ = _run(capsys, "check", "ws/pipelines/child.yaml", "--format", "json")
    assert code == 1
    doc = json.loads(out)
    (diag,) = doc["diagnostics"]
    # 1 + 950 + 100 + 50 = 1101 > 1000
    assert diag["related"] == [
        {"message": "system_prompt: 1", "location": _loc("ws/prompts/sys.txt", 0, 0, 0)},
        {"message": "context: 950", "location": _loc("ws/pipelines/child.yaml", 2, 22, 25)},
        {"message": "output: 100", "location": _loc("ws/config.json", 2, 22, 25)},
        {"message": "margin: 50 (inherited)",
         "location": _loc("ws/pipelines/base.yaml", 2, 31, 33)},
        {"message": "window: 1000", "location": _loc("ws/config.json", 1, 26, 30)}]
    (step,) = doc["steps"]
    assert step["terms"]["context"] == {
        "value": 950, "source": "settings.max_context_tokens", "inherited": False,
        "location": _loc("ws/pipelines/child.yaml", 2, 22, 25)}
    assert step["terms"]["margin"] == {
        "value": 50, "source": "settings.budget_safety_margin_tokens", "inherited": True,
        "location": _loc("ws/pipelines/base.yaml", 2, 31, 33)}
    assert step["terms"]["format_overhead"] == {
        "value": 0, "source": "config.json format_overhead_tokens", "inherited": False,
        "location": _loc("ws/config.json", 3, 28, 29)}
    assert step["terms"]["history"] == {"value": 0, "source": "use_history is off",
                                        "inherited": False, "location": None}


def test_sarif_has_related_locations_and_inline_help_without_a_relative_uri(
        capsys: pytest.CaptureFixture[str]) -> None:
    _over_workspace()
    code, out, _ = _run(capsys, "check", "ws/pipelines/child.yaml", "--format", "sarif")
    assert code == 1
    run = json.loads(out)["runs"][0]
    (rule,) = run["tool"]["driver"]["rules"]
    help_text = ("Lower max_context_tokens, the step's output limit, the history budget or the"
                 " prompt; `budgetlens clamp --diff` shows the clamp plan and `budgetlens clamp"
                 " --write` applies it.")
    assert rule == {
        "id": "BL050",
        "shortDescription": {"text": "step does not fit the context window (error in"
                                     " fail_fast, warning in auto_clamp)"},
        "fullDescription": {"text": "step does not fit the context window (error in fail_fast,"
                                    " warning in auto_clamp). " + help_text},
        "help": {"text": help_text},
        # issue 35: an absolute helpUri, the code's section of docs/diagnostics.md
        "helpUri": "https://github.com/budgetlens/budgetlens/blob/main/docs/diagnostics.md#bl050",
        "defaultConfiguration": {"level": "error"}}
    (result,) = run["results"]
    related = [(r["id"], r["message"]["text"],
                r["physicalLocation"]["artifactLocation"]["uri"],
                r["physicalLocation"]["region"]["startLine"],
                r["physicalLocation"]["region"]["startColumn"])
               for r in result["relatedLocations"]]
    assert related == [(1, "system_prompt: 1", "ws/prompts/sys.txt", 1, 1),
                       (2, "context: 950", "ws/pipelines/child.yaml", 3, 23),
                       (3, "output: 100", "ws/config.json", 3, 23),
                       (4, "margin: 50 (inherited)", "ws/pipelines/base.yaml", 3, 32),
                       (5, "window: 1000", "ws/config.json", 2, 27)]
    # issue 35: helpUri is back, never relative (was: no helpUri at all)
    assert json.dumps(run).count('"helpUri": "https://github.com/budgetlens/') == \
        json.dumps(run).count('"helpUri"') == 1


def test_every_code_has_help_text_for_sarif() -> None:
    assert set(codes.HELP) == set(codes.CODES)
    assert all(text.endswith(".") and len(text) > 20 for text in codes.HELP.values())


# ------------------------------------------------------------------------ BL200 (editor)
def test_the_truncated_json_message_names_no_editor_specific_command() -> None:
    diag = json_diagnostic("reply.json", get_contexts('{"a": "cut'))
    assert diag is not None
    assert diag.message == ('truncated JSON: cut inside a string at a; run the budgetlens'
                            ' "show hierarchy context" command (the quick fix) to see what a'
                            ' continuation needs')
