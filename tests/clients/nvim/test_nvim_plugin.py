"""The Neovim plugin itself, end to end in real headless Neovim (issue 5, point 3).

The user config is tests/clients/nvim/plugin_init.lua: editor-clients/nvim on the runtimepath and
``require("budgetlens").setup{}``. tests/clients/nvim/plugin_flow.lua then only opens files and runs
the plugin's commands like a user; this test asserts on what Neovim showed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .nvim_harness import HERE, copy_examples, run_in_examples, run_nvim_script, write_report_budget

PIPELINE = "pipelines/long_report.yaml"
OTHER = "pipelines/chat.yaml"
PROMPT = "prompts/report.txt"
TRUNCATED = "responses/truncated.json"
MARKER = "<<<CUT>>>"


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return run_in_examples(
        tmp_path_factory, "nvim-plugin", HERE / "plugin_flow.lua",
        init=str(HERE / "plugin_init.lua"),
        extra_env={"BUDGETLENS_NVIM_PIPELINE": PIPELINE, "BUDGETLENS_NVIM_OTHER_PIPELINE": OTHER,
                   "BUDGETLENS_NVIM_PROMPT": PROMPT, "BUDGETLENS_NVIM_TRUNCATED": TRUNCATED})


@pytest.mark.nvim
def test_setup_registers_the_user_commands(results: dict[str, Any]) -> None:
    assert results["setup_called"] is True
    assert results["user_commands"] == {"hierarchy": 2, "clamp_all": 2, "report": 2}


@pytest.mark.nvim
def test_default_settings_reach_the_server_as_objects(results: dict[str, Any]) -> None:
    # Neovim encodes an empty Lua table as []; the server would warn about invalid settings
    assert "invalid" not in results["messages"], results["messages"]


@pytest.mark.nvim
def test_plugin_attaches_one_client_per_root_and_diagnostics_arrive(
        results: dict[str, Any]) -> None:
    assert Path(results["root_dir"]) == Path(results["workspace"])
    errors = [d for d in results["diagnostics"] if d["severity"] == 1]
    assert errors and all(str(d["code"]).startswith("BL") for d in errors)
    lines = (Path(results["workspace"]) / PIPELINE).read_text().split("\n")
    step_line = next(i for i, line in enumerate(lines) if "id: write_report" in line)
    assert any(d["lnum"] == step_line and "write_report" in d["message"] for d in errors)
    attached = results["attached"]
    first = attached["first"]
    assert attached["other"] == [first]  # the same client, reused
    assert attached["prompt"] == [first]  # prompts/*.txt attach too
    assert attached["notes"] == []  # a .txt outside the prompts folder does not


@pytest.mark.nvim
def test_plugin_refreshes_code_lenses_and_a_lens_command_runs(results: dict[str, Any]) -> None:
    titles = [lens["title"] for lens in results["lenses"] if isinstance(lens["title"], str)]
    assert any(" over)" in t for t in titles), titles
    report_run, location_run = results["lens_runs"]
    # the step lens asks the server for the budget report: a scratch split with the table
    assert report_run["command"] == "budgetlens.showBudgetReport"
    assert report_run["buffer"].startswith("budgetlens://report/long_report.yaml")
    assert report_run["windows"] == 1
    assert any(line.split()[:1] == ["write_report"] and line.split()[-1] == "NO"
               for line in report_run["lines"]), report_run["lines"]
    # the settings lens opens the tightest step: the cursor lands on `id: write_report`
    assert location_run["command"] == "budgetlens.showLocation"
    assert "write_report" in location_run["title"]
    lines = (Path(results["workspace"]) / PIPELINE).read_text().splitlines()
    step_line = next(i for i, line in enumerate(lines) if "id: write_report" in line)
    assert location_run["buffer"].endswith(PIPELINE)
    assert location_run["cursor"] == [step_line + 1, lines[step_line].index("write_report")]


@pytest.mark.nvim
def test_budgetlens_hierarchy_opens_the_marked_text_with_the_cursor_on_the_cut(
        results: dict[str, Any]) -> None:
    h = results["hierarchy"]
    assert h["windows_after"] == h["windows_before"] + 1  # a split
    assert h["buftype"] == "nofile" and h["modifiable"] is False
    assert h["clients"] == []  # the scratch buffer is not served
    lines = h["lines"]
    row = max(i for i, line in enumerate(lines) if MARKER in line)
    col = lines[row].rindex(MARKER)
    assert h["cursor"] == [row + 1, col]
    assert h["cursor_line"][:col].endswith("in the middle of this sentence and the JSON is"
                                           " truncated")
    assert any(m["row"] == row and m["col"] == col and m["end_col"] == col + len(MARKER)
               and m["hl_group"] == "ErrorMsg" for m in h["highlights"]), h["highlights"]
    assert any(isinstance(m["virt_text"], list)
               and "document.sections[1].content" in m["virt_text"][0][0]
               for m in h["highlights"]), h["highlights"]
    assert h["info"]["cut"]["path"] == "document.sections[1].content"


@pytest.mark.nvim
def test_budgetlens_hierarchy_takes_a_budget_argument(results: dict[str, Any]) -> None:
    text = "\n".join(results["hierarchy_zero"])
    assert MARKER in text
    # with budget 0 (summary mode) the complete sibling section's values are not printed
    assert "This is the introduction content..." not in text
    full = "\n".join(results["hierarchy"]["lines"])
    assert "This is the introduction content..." in full


@pytest.mark.nvim
def test_budgetlens_report_and_clamp_all(results: dict[str, Any]) -> None:
    report = "\n".join(results["report"])
    assert "outline" in report and "write_report" in report
    budget = write_report_budget()
    # the plan lowers max_context_tokens by the worst step's overrun (by hand)
    expected = budget["context"] - (budget["total"] - budget["window"])
    original = (Path(results["workspace"]) / PIPELINE).read_text().splitlines()
    assert results["clamped_lines"] == [line.replace("6144", str(expected)) for line in original]


@pytest.mark.nvim
def test_lsp_config_for_011_and_the_missing_server_message(tmp_path: Path) -> None:
    workspace = copy_examples(tmp_path)
    data = run_nvim_script(HERE / "config_flow.lua", workspace=workspace, tmp_path=tmp_path)
    config = data["lsp_config"]
    assert config["cmd"] == ["budgetlens", "serve"]
    assert config["filetypes"] == ["yaml", "json", "text"]
    assert config["root_markers"] == ["config.json"]
    assert config["settings"] == {"budgetlens": {}}
    assert config["root_dir_is_function"] is True
    root = str(workspace)
    assert data["roots"] == {"pipelines/chat.yaml": root, "prompts/chat.txt": root,
                             "responses/truncated.json": root, "notes.txt": None,
                             "outside": None}
    missing = data["missing_server"]
    assert missing["clients"] == 0
    assert len(missing["notes"]) == 1
    assert "budgetlens-not-installed-here" in missing["notes"][0]["message"]
    assert "not found on PATH" in missing["notes"][0]["message"]
    assert missing["notes"][0]["level"] == 4  # vim.log.levels.ERROR


@pytest.mark.nvim
def test_lenses_refresh_on_buffer_events_and_show_the_clamped_budget(
        results: dict[str, Any]) -> None:
    assert results["lens_autocmds"] == ["BufEnter", "BufWritePost", "InsertLeave"]
    budget = write_report_budget()
    clamped = budget["context"] - (budget["total"] - budget["window"])
    expected = (f"fixed {budget['fixed']} + history 0 + context {clamped} + output "
                f"{budget['output']} + margin {budget['margin']} = {budget['window']} / "
                f"{budget['window']} (0 free)")
    assert expected in [t.replace(",", "") for t in results["lenses_after_clamp"]]


@pytest.mark.nvim
def test_commands_explain_misuse(results: dict[str, Any]) -> None:
    bad_budget, no_server, no_server_report = results["misuse"]
    assert "whole number" in bad_budget["message"] and "lots" in bad_budget["message"]
    assert bad_budget["level"] == 4  # ERROR
    for note in (no_server, no_server_report):
        assert "no budgetlens server is attached" in note["message"]
        assert note["level"] == 3  # WARN
