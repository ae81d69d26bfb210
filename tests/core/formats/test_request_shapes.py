"""Picoschema read as Genkit reads it, and each format's tools and schema in the shapes
the contract counts.

The Picoschema expectations are Genkit's own: the cases of ``js/src/picoschema.test.ts`` in
google/dotprompt (commit 4532bb116a9f6182259d481b6c61ac0cef295115), copied as data.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from budgetlens.formats import prompty as prompty_reader
from budgetlens.formats import read_prompt_file
from budgetlens.formats.request_shapes import picoschema
from tests.core.formats.helpers import CORPUS

GENKIT_CASES: list[tuple[Any, Any]] = [
    ("number, A numeric value", {"type": "number", "description": "A numeric value"}),
    ("any", {}),
    ({"type": "string", "format": "email"}, {"type": "string", "format": "email"}),
    ({"properties": {"foo": {"type": "string"}}},
     {"properties": {"foo": {"type": "string"}}, "type": "object"}),
    ({"req": "string, required field", "nonreq?": "boolean, optional field"},
     {"type": "object", "properties": {
         "req": {"type": "string", "description": "required field"},
         "nonreq": {"type": ["boolean", "null"], "description": "optional field"}},
      "required": ["req"], "additionalProperties": False}),
    ({"tags(array, list of tags)": "string, the tag", "vector(array)": "number"},
     {"type": "object", "properties": {
         "tags": {"type": "array", "description": "list of tags",
                  "items": {"type": "string", "description": "the tag"}},
         "vector": {"type": "array", "items": {"type": "number"}}},
      "required": ["tags", "vector"], "additionalProperties": False}),
    ({"obj?(object, a nested object)": {"nest1?": "string"},
      "arr(array, array of objects)": {"nest2?": "boolean"}},
     {"type": "object", "properties": {
         "obj": {"type": ["object", "null"], "description": "a nested object",
                 "properties": {"nest1": {"type": ["string", "null"]}},
                 "additionalProperties": False},
         "arr": {"type": "array", "description": "array of objects", "items": {
             "type": "object", "properties": {"nest2": {"type": ["boolean", "null"]}},
             "additionalProperties": False}}},
      "required": ["arr"], "additionalProperties": False}),
    ({"color?(enum, the enum)": ["RED", "BLUE", "GREEN"]},
     {"type": "object", "properties": {
         "color": {"description": "the enum", "enum": ["RED", "BLUE", "GREEN", None]}},
      "additionalProperties": False}),
    ({"otherField": "string, another string", "(*)": "any, whatever you want"},
     {"type": "object", "properties": {
         "otherField": {"type": "string", "description": "another string"}},
      "required": ["otherField"], "additionalProperties": {"description": "whatever you want"}}),
    ("string,    A text string with extra whitespace    ",
     {"type": "string", "description": "A text string with extra whitespace    "}),
]


@pytest.mark.parametrize(("pico", "expected"), GENKIT_CASES)
def test_picoschema_reads_as_genkit_reads_it(pico: Any, expected: Any) -> None:
    assert picoschema(pico) == expected


def test_prompty_v2_tools_become_openai_definitions() -> None:
    text = ("---\nmodel: gpt-4o\ntools:\n  - name: find\n    kind: function\n"
            "    description: Find a thing.\n    parameters:\n      - name: what\n"
            "        kind: string\n        description: The thing.\n        required: true\n"
            "---\nuser:\n{{q}}\n")
    prompt = read_prompt_file("a.prompty", text)
    assert prompt is not None and prompt.steps[0].tools is not None
    assert prompt.steps[0].tools.value == [{"type": "function", "function": {
        "name": "find", "description": "Find a thing.", "parameters": {
            "type": "object", "properties": {"what": {"type": "string",
                                                      "description": "The thing."}},
            "required": ["what"]}}}]
    assert prompt.steps[0].tools.key == "tools"


def test_dotprompt_tool_names_carry_no_definition() -> None:
    text = "---\nmodel: openai/gpt-4o\ntools: [a, b]\n---\nHi\n"
    prompt = read_prompt_file("a.prompt", text)
    assert prompt is not None and prompt.steps[0].tools is not None
    assert prompt.steps[0].tools.value is None


def test_github_models_json_object_format_has_no_schema() -> None:
    text = ("model: openai/gpt-4o\nresponseFormat: json_object\njsonSchema: '{\"name\": \"x\","
            " \"schema\": {\"type\": \"object\"}}'\nmessages:\n  - role: user\n"
            "    content: hi\n")
    prompt = read_prompt_file("a.prompt.yml", text)
    assert prompt is not None and prompt.steps[0].output_schema is None


def test_github_models_reads_neither_tools_nor_a_schema_without_json_schema_format() -> None:
    # actions/ai-inference a7805884 (src/prompt.ts, src/helpers.ts buildResponseFormat) and
    # gh-models 178d921 (pkg/prompt/prompt.go) send jsonSchema only with
    # responseFormat: json_schema, and read no tools key
    text = ("model: openai/gpt-4o\njsonSchema: '{\"name\": \"x\", \"schema\": {\"type\":"
            " \"object\"}}'\ntools:\n  - type: function\n    function: {name: f}\n"
            "messages:\n  - role: user\n    content: hi\n")
    prompt = read_prompt_file("a.prompt.yml", text)
    assert prompt is not None
    assert prompt.steps[0].output_schema is None and prompt.steps[0].tools is None
    with_format = read_prompt_file("a.prompt.yml", "responseFormat: json_schema\n" + text)
    assert with_format is not None and with_format.steps[0].output_schema is not None
    assert with_format.steps[0].output_schema.value == {
        "type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "object"}}}


@pytest.mark.parametrize("name", ["tools_function.prompty", "spec_structured.prompty"])
def test_prompty_tools_and_outputs_are_what_its_runtime_sends(name: str) -> None:
    """prompty 2.x's OpenAI executor builds the request's tools and response_format from the
    same corpus file: the reader's values are equal."""
    pytest.importorskip("prompty")
    import prompty as runtime
    from prompty.providers.openai.executor import _output_schema_to_wire, _tools_to_wire

    path = CORPUS / "prompty" / "v2" / name
    agent = runtime.load(str(path))
    [step] = prompty_reader.read(path.read_text("utf-8"), str(path), root=CORPUS).steps
    assert (step.tools.value if step.tools else None) == _tools_to_wire(agent)
    assert (step.output_schema.value if step.output_schema else None) == \
        _output_schema_to_wire(agent)


def _output_of(path: Path) -> object:
    text = path.read_text("utf-8")
    if not text.startswith("---"):
        return None  # a partial: no front matter
    front = yaml.safe_load(text.split("---", 2)[1])
    return front.get("output") if isinstance(front, dict) else None


DOTPROMPTS = sorted(p for p in (CORPUS / "dotprompt").rglob("*.prompt")
                    if not p.name.startswith("_"))
#: the corpus files whose output has a Picoschema (``output.schema``)
DOTPROMPT_SCHEMAS = [p for p in DOTPROMPTS
                     if isinstance(_output_of(p), dict) and "schema" in _output_of(p)]  # type: ignore[operator]
#: the one whose schema names a type registered in code (``schema: Recipe``)
NAMED_SCHEMA = "recipe.prompt"


def test_the_corpus_has_output_schemas_to_compare() -> None:
    assert len(DOTPROMPT_SCHEMAS) >= 5 and NAMED_SCHEMA in {p.name for p in DOTPROMPT_SCHEMAS}


@pytest.mark.parametrize("path", [p for p in DOTPROMPTS if p not in DOTPROMPT_SCHEMAS],
                         ids=lambda p: p.name)
def test_a_dotprompt_without_output_schema_reads_none(path: Path) -> None:
    prompt = read_prompt_file(str(path), path.read_text("utf-8"))
    assert prompt is not None
    assert all(step.output_schema is None for step in prompt.steps)


@pytest.mark.parametrize("path", DOTPROMPT_SCHEMAS, ids=lambda p: p.name)
def test_dotprompt_output_schema_is_what_dotpromptz_makes_of_it(path: Path) -> None:
    """dotpromptz (the Python Dotprompt runtime) turns each corpus file's output.schema into
    JSON Schema with its own Picoschema parser: the reader's value is equal. A schema named
    by a type registered in code cannot be resolved from the file: dotpromptz refuses it
    without its resolver, and the reader counts it as ``{}``."""
    from dotpromptz.picoschema import picoschema_to_json_schema

    prompt = read_prompt_file(str(path), path.read_text("utf-8"))
    assert prompt is not None and prompt.steps and prompt.steps[0].output_schema is not None
    output = _output_of(path)
    assert isinstance(output, dict)
    if path.name == NAMED_SCHEMA:
        with pytest.raises(Exception, match="unsupported scalar type 'Recipe'"):
            asyncio.run(picoschema_to_json_schema(output["schema"]))
        assert prompt.steps[0].output_schema.value == {}
        return
    expected = asyncio.run(picoschema_to_json_schema(output["schema"]))
    assert prompt.steps[0].output_schema.value == expected
