"""Prompty files, v1 and v2: fixed texts written out by hand, counted with tiktoken, ranges
checked by slicing the file, and the format's problems."""

from __future__ import annotations

from pathlib import Path

from budgetlens.formats import prompty, read_prompt_file
from budgetlens.formats.model import ProblemKind, PromptFile
from tests.core.formats.helpers import CORPUS, sliced, tokens

PR = CORPUS / "prompty"


def _read(name: str, **kw: object) -> tuple[str, PromptFile]:
    text = (PR / name).read_text("utf-8")
    return text, prompty.read(text, str(PR / name), root=CORPUS, **kw)  # type: ignore[arg-type]


SYSTEM_V2 = ("You are an AI assistant who helps people find information.\n"
             "\n"
             "# Customer\n"
             "You are helping   to find answers to their questions.")


def test_v2_basic_messages_output_options_and_env_references() -> None:
    text, result = _read("v2/basic.prompty")
    assert result.version == "v2"
    step = result.steps[0]
    assert [(m.role, m.text) for m in step.messages] == [("system", SYSTEM_V2), ("user", "")]
    assert [m.variables for m in step.messages] == [("firstName", "lastName"), ("question",)]
    assert tokens(SYSTEM_V2) == 25
    assert sliced(text, step.messages[0].range) == (
        "You are an AI assistant who helps people find information.\n\n# Customer\n"
        "You are helping {{firstName}} {{lastName}} to find answers to their questions.\n\n")
    assert sliced(text, step.messages[1].range) == "{{question}}\n"
    assert (step.output.value, step.output.key) == (1000, "model.options.maxOutputTokens")
    assert sliced(text, step.output.range) == "1000"
    assert sliced(text, step.output.key_range) == "maxOutputTokens"
    assert step.model is not None and (step.model.value, step.model.key) == ("gpt-4", "model.id")
    assert step.declared == ("firstName", "lastName", "question")
    assert step.samples == [{"firstName": "Jane", "lastName": "Doe",
                             "question": "What is the meaning of life?"}]
    assert [(p.kind, sliced(text, p.range)) for p in result.problems] == [
        (ProblemKind.ENV_UNRESOLVED, "${env:AZURE_OPENAI_ENDPOINT}"),
        (ProblemKind.ENV_UNRESOLVED, "${env:AZURE_OPENAI_API_KEY}"),
    ]
    concrete = prompty.read(text, "basic.prompty", inputs=step.samples[0])
    assert [m.text for m in concrete.steps[0].messages] == [
        SYSTEM_V2.replace("helping   to", "helping Jane Doe to"),
        "What is the meaning of life?"]
    assert tokens("What is the meaning of life?") == 7


SYSTEM_V1 = ("You are an AI assistant who helps people find information.\n"
             "As the assistant, you answer questions briefly, succinctly, \n"
             "and in a personable manner using markdown and even add some personal flair"
             " with appropriate emojis.\n"
             "\n"
             "# Customer\n"
             "You are helping   to find answers to their questions.\n"
             "Use their name to address them in your responses.")


def test_v1_basic_azure_deployment_and_where_max_tokens_goes() -> None:
    text, result = _read("v1/basic.prompty")
    assert result.version == "v1"
    step = result.steps[0]
    assert [(m.role, m.text) for m in step.messages] == [("system", SYSTEM_V1), ("user", "")]
    assert tokens(SYSTEM_V1) == 65
    assert step.model is not None
    assert (step.model.value, step.model.key) == ("gpt-35-turbo",
                                                  "model.configuration.azure_deployment")
    assert sliced(text, step.model.range) == "gpt-35-turbo"
    # no model.parameters: a fix inserts parameters.max_tokens into the model mapping
    assert (step.output.value, step.output.key) == (None, "model.parameters.max_tokens")
    assert sliced(text, step.output.insert_range) == (
        "api: chat\n  configuration:\n    azure_deployment: gpt-35-turbo\n")
    assert sliced(text, step.messages[1].range) == "{{question}}"
    assert result.problems == []


def test_v2_thread_input_is_the_history_and_adds_no_text() -> None:
    text, result = _read("v2/threaded.prompty")
    step = result.steps[0]
    assert step.history == "conversation"
    assert [(m.role, m.text) for m in step.messages] == [
        ("system", "You are a helpful assistant."), ("user", "")]
    assert step.messages[0].history and not step.messages[1].history
    assert tokens("You are a helpful assistant.") == 6
    assert sliced(text, step.messages[0].range) == (
        "You are a helpful assistant.\n\n{{conversation}}\n\n")


def test_v1_max_tokens_key_and_range() -> None:
    text, result = _read("v1/shakespeare.prompty")
    step = result.steps[0]
    assert (step.output.value, step.output.key) == (3000, "model.parameters.max_tokens")
    assert sliced(text, step.output.range) == "3000"
    assert step.samples == [{"question": "Please write a short text inviting friends to a"
                                         " Game Night."}]


def test_file_reference_inside_the_workspace_is_inlined() -> None:
    _, result = _read("v2/file_ref.prompty")
    step = result.steps[0]
    assert step.declared == ("question",)  # from schema.json
    assert result.problems == []


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")
    return path


def test_file_reference_outside_the_workspace_is_not_read(tmp_path: Path) -> None:
    _write(tmp_path, "secret.json", '{"question": {"kind": "string"}}')
    text = ("---\nmodel: gpt-4o\ninputs: ${file:../secret.json}\n---\n"
            "user:\n{{question}}\n")
    path = _write(tmp_path, "ws/p.prompty", text)
    result = prompty.read(text, str(path), root=tmp_path / "ws")
    [problem] = result.problems
    assert problem.kind is ProblemKind.FILE_REFERENCE and "outside" in problem.message
    assert sliced(text, problem.range) == "${file:../secret.json}"
    missing = prompty.read(text.replace("../secret", "nope"), str(path), root=tmp_path / "ws")
    assert [p.kind for p in missing.problems] == [ProblemKind.FILE_REFERENCE]


def test_variable_used_but_not_declared(tmp_path: Path) -> None:
    text = ("---\nmodel:\n  id: gpt-4o\ninputs:\n  - name: question\n    kind: string\n---\n"
            "system:\nAnswer in {{language}}.\n\nuser:\n{{question}}\n")
    result = prompty.read(text, str(_write(tmp_path, "p.prompty", text)), root=tmp_path)
    [problem] = result.problems
    assert problem.kind is ProblemKind.VARIABLE_UNDECLARED and "'language'" in problem.message
    assert sliced(text, problem.range) == "Answer in {{language}}.\n\n"


def test_reasoning_deployment_with_max_tokens(tmp_path: Path) -> None:
    text = ("---\nmodel:\n  api: chat\n  configuration:\n    azure_deployment: o1-mini\n"
            "  parameters:\n    max_tokens: 800\n---\nuser:\nhi\n")
    result = read_prompt_file(str(tmp_path / "r.prompty"), text)
    assert result is not None
    [problem] = result.problems
    assert problem.kind is ProblemKind.NEEDS_COMPLETION_TOKENS
    assert sliced(text, problem.range) == "max_tokens"


def test_mustache_body_sections_count_once() -> None:
    text = ("---\nmodel: gpt-4o\ntemplate:\n  format:\n    kind: mustache\n---\n"
            "system:\nRules:{{#rules}}\n- {{.}}{{/rules}}{{^rules}} none{{/rules}}\n"
            "user:\n{{q}}\n")
    step = prompty.read(text, "m.prompty").steps[0]
    assert [(m.role, m.text) for m in step.messages] == [("system", "Rules:\n- "),
                                                        ("user", "")]
    assert step.messages[0].variables == ("rules",)


def test_jinja_blocks_count_once_and_template_errors_are_problems() -> None:
    text = ("---\nmodel: gpt-4o\n---\nsystem:\n{% for d in docs %}[{{d.title}}] {{d.body}}\n"
            "{% endfor %}{% if extra %}Extra: {{extra}}{% else %}None.{% endif %}\n")
    step = prompty.read(text, "j.prompty").steps[0]
    assert [m.text for m in step.messages] == ["[] \nExtra: "]
    assert step.messages[0].variables == ("docs", "extra")
    _, result = _read("v1/faithfulness.prompty")  # {% extends "evaluation.prompty" %}
    assert [p.kind for p in result.problems] == [ProblemKind.TEMPLATE]
    assert result.steps[0].messages == []


def test_crlf_file_ranges_are_in_the_whole_file() -> None:
    text = ("---\r\nmodel:\r\n  id: gpt-4o\r\n  options:\r\n    maxOutputTokens: 300\r\n---\r\n"
            "system:\r\nBe kind \U0001F600.\r\nuser:\r\n{{q}}\r\n")
    result = prompty.read(text, "c.prompty")
    step = result.steps[0]
    assert result.problems == []
    assert [(m.role, m.text) for m in step.messages] == [("system", "Be kind \U0001F600."),
                                                        ("user", "")]
    assert step.output.range is not None and step.output.value == 300
    assert (step.output.range.start.line, step.output.range.start.character) == (4, 21)
    assert text.split("\r\n")[4][21:24] == "300"
    first = step.messages[0].range
    assert (first.start.line, first.start.character, first.end.line) == (7, 0, 8)


def test_jinja_fields_named_like_methods_and_tojson_render_empty() -> None:
    text = ("---\nmodel: gpt-4o\n---\nsystem:\nItems: {{ order.items }}; n={{ doc.count }}\n"
            "{% for k, v in meta.items() %}{{ k }}: {{ v }}{% endfor %}\n"
            "Context: {{ ctx | tojson }}{{ x.alters_data }}\n")
    result = prompty.read(text, "j.prompty")
    assert result.problems == []
    assert [m.text for m in result.steps[0].messages] == [
        'Items: ; n=\n: \nContext: ""']


def test_nested_ranges_are_capped_while_variables_are_empty() -> None:
    text = ("---\nmodel: gpt-4o\n---\nsystem:\n"
            "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
            "{% for i in range(3) %}Example {{ i }}. {% endfor %}{{ q }}\n")
    [message] = prompty.read(text, "r.prompty").steps[0].messages
    assert message.text == "Example 0. Example 1. Example 2. "
