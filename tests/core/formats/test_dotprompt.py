"""Dotprompt files: fixed texts written out by hand, counted with tiktoken, ranges checked
by slicing the file, partials, helpers and the format's problems."""

from __future__ import annotations

from pathlib import Path

from budgetlens.formats import dotprompt, format_of
from budgetlens.formats.model import ProblemKind, PromptFile
from tests.core.formats.helpers import CORPUS, sliced, tokens

DP = CORPUS / "dotprompt"


def _read(name: str) -> tuple[str, PromptFile]:
    text = (DP / name).read_text("utf-8")
    return text, dotprompt.read(text, str(DP / name), root=CORPUS)


def test_hello_system_roles_output_schema_and_default() -> None:
    text, result = _read("dev-ui/hello.system.prompt")
    step = result.steps[0]
    system = "\nYou are a helpful AI assistant that really loves to make impressions.\n"
    user = "\nSay hello to  in the voice of a ."
    assert [(m.role, m.text) for m in step.messages] == [("system", system), ("user", user)]
    assert [m.variables for m in step.messages] == [(), ("name", "persona")]
    assert (tokens(system), tokens(user)) == (14, 11)
    assert sliced(text, step.messages[0].range) == system
    assert sliced(text, step.messages[1].range) == (
        "\nSay hello to {{name}} in the voice of a {{persona}}.")
    assert (step.output.value, step.output.key) == (2048, "config.maxOutputTokens")
    assert sliced(text, step.output.range) == "2048"
    assert sliced(text, step.output.key_range) == "maxOutputTokens"
    assert step.model is not None and sliced(text, step.model.range) == \
        "googleai/gemini-2.5-flash"
    assert step.declared == ("name", "persona", "persona")
    assert step.samples == [{"persona": "Space Pirate"}]
    assert result.problems == []


def test_history_helper_makes_a_model_message() -> None:
    _, result = _read("dev-ui/hello.history.prompt")
    step = result.steps[0]
    assert [m.role for m in step.messages] == ["system", "user", "model", "user"]
    assert step.messages[2].text == (
        "\nShiver me timbers, matey! We be sailing the solar winds!\n")
    assert tokens(step.messages[2].text) == 17
    assert step.history is None  # {{role "model"}}, not {{history}}
    _, kitchen = _read("genkit-tests/kitchensink.prompt")
    assert kitchen.steps[0].history == "history"
    assert [(m.role, m.text) for m in kitchen.steps[0].messages] == [
        ("system", " Hello "), ("model", " from the prompt file ")]


def test_partial_is_inlined_and_if_blocks_count_their_body_once() -> None:
    text, result = _read("prompt-file/story.prompt")
    step = result.steps[0]
    system, user = "\nYou should speak as if you are a .\n", "\nTell me a story about ."
    assert [(m.role, m.text) for m in step.messages] == [("system", system), ("user", user)]
    assert (tokens(system), tokens(user)) == (10, 7)
    # the partial brings its own role markers: its message points at the partial's tag
    assert sliced(text, step.messages[0].range) == "{{>style personality=personality}}"
    assert sliced(text, step.messages[1].range) == "\n\nTell me a story about {{subject}}."
    assert [m.variables for m in step.messages] == [("personality",), ("subject",)]
    # no config: a fix inserts config.maxOutputTokens into the front matter
    assert step.output.value is None
    assert sliced(text, step.output.insert_range).startswith("model: googleai/gemini-pro")
    assert result.problems == []


def test_missing_partial_is_reported_at_its_tag(tmp_path: Path) -> None:
    text = "---\nmodel: googleai/gemini-2.5-flash\n---\n{{>header}}\nSummarize {{text}}.\n"
    path = tmp_path / "s.prompt"
    path.write_text(text, "utf-8")
    result = dotprompt.read(text, str(path), root=tmp_path)
    [problem] = result.problems
    assert problem.kind is ProblemKind.PARTIAL_MISSING and "_header.prompt" in problem.message
    assert sliced(text, problem.range) == "{{>header}}"
    # a partial alone on its line takes the line's end with it (Handlebars' standalone rule)
    assert [m.text for m in result.steps[0].messages] == ["Summarize ."]
    (tmp_path / "_header.prompt").write_text('{{role "system"}}Be brief.{{role "user"}}',
                                             "utf-8")
    found = dotprompt.read(text, str(path), root=tmp_path)
    assert found.problems == []
    assert [(m.role, m.text) for m in found.steps[0].messages] == [
        ("system", "Be brief."), ("user", "Summarize .")]


def test_partial_outside_the_workspace_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "_header.prompt").write_text("secret", "utf-8")
    ws = tmp_path / "ws"
    ws.mkdir()
    text = "---\nmodel: googleai/gemini-2.5-flash\n---\n{{>header}} hi\n"
    result = dotprompt.read(text, str(ws / "s.prompt"), root=ws)
    assert [p.kind for p in result.problems] == [ProblemKind.PARTIAL_MISSING]
    assert "secret" not in result.steps[0].messages[0].text


def test_unknown_helper_counts_as_empty_and_is_reported() -> None:
    text, result = _read("prompt-file/recipe.prompt")
    [problem] = result.problems
    assert problem.kind is ProblemKind.HELPER_UNKNOWN
    assert sliced(text, problem.range) == "list"
    [message] = result.steps[0].messages
    assert message.text == (
        "You are a chef famous for making creative recipes that can be prepared in 45 minutes"
        " or less.\n\nGenerate a recipe for .\n\nMake sure to include the following"
        " ingredients:\n\n")
    assert message.variables == ("food", "ingredients")
    assert tokens(message.text) == 33


def test_variable_used_but_not_in_the_schema(tmp_path: Path) -> None:
    text = ("---\nmodel: googleai/gemini-2.5-flash\ninput:\n  schema:\n    topic: string\n---\n"
            "{{role \"system\"}}Write in {{style}}.\n{{role \"user\"}}About {{topic}}."
            "{{#each notes}}- {{this.text}}{{/each}}\n")
    result = dotprompt.read(text, "v.prompt")
    style, notes = result.problems
    assert style.kind is notes.kind is ProblemKind.VARIABLE_UNDECLARED
    assert "'style'" in style.message and "'notes'" in notes.message
    assert sliced(text, style.range) == "Write in {{style}}.\n"
    assert sliced(text, notes.range).startswith("About {{topic}}.{{#each notes}}")
    assert result.steps[0].messages[1].variables == ("topic", "notes")  # not this.text
    assert result.steps[0].messages[1].text == "About .- "


def test_only_dotprompt_front_matter_makes_a_prompt_file_dotprompt() -> None:
    assert format_of("a.prompt", "---\nmodel: googleai/gemini-2.5-flash\n---\nhi") == \
        "dotprompt"
    assert format_of("b.prompt", "You are a shell. Answer in one line.") is None
    assert format_of("c.prompt", '{{role "system"}}x') == "dotprompt"
    assert format_of("d.prompt", "# licence\n\n---\nconfig: {}\n---\nhi") == "dotprompt"


def test_front_matter_ranges_in_file_coordinates_with_bom_crlf_and_astral_text() -> None:
    text = ("\ufeff---\r\n"
            "description: \U0001F600 caf\u00e9 prompt\r\n"
            "model: googleai/gemini-2.5-flash\r\n"
            "config: {temperature: 0.2, maxOutputTokens: 512}\r\n"
            "---\r\n"
            "{{role \"system\"}}\U0001F600 Be brief.\r\n"
            "{{role \"user\"}}{{q}}\r\n")
    result = dotprompt.read(text, "b.prompt")
    step = result.steps[0]
    assert result.problems == []
    # line 3 (0-based), after "config: {temperature: 0.2, " (27 code points)
    assert step.output.range is not None
    assert (step.output.range.start.line, step.output.range.start.character) == (3, 44)
    assert (step.output.key_range.start.line, step.output.key_range.start.character) == (3, 27)
    assert step.model is not None and step.model.range is not None
    assert (step.model.range.start.line, step.model.range.start.character) == (2, 7)
    lines = text.split("\r\n")
    assert lines[3][44:47] == "512" and lines[3][27:42] == "maxOutputTokens"
    assert [(m.role, m.text) for m in step.messages] == [
        ("system", "\U0001F600 Be brief.\r\n"), ("user", "")]
    assert (step.messages[0].range.start.line, step.messages[0].range.start.character) == (5, 17)
