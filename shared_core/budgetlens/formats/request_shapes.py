"""A prompt file's tools and output schema in the shapes the contract counts.

The contract counts a step's ``tools`` as OpenAI's tool definitions and its
``response_schema`` as a JSON Schema (or OpenAI's ``json_schema`` response format).
Each format writes them its own way; the readers convert here:

- OpenAI-shaped definitions (Prompty v1 ``model.parameters.tools``) are kept as written.
- GitHub Models files have no tools: neither runner reads a ``tools`` key
  (actions/ai-inference ``src/prompt.ts`` ``PromptConfig`` at a7805884; github/gh-models
  ``pkg/prompt/prompt.go`` ``File`` at 178d921).
- Prompty v2 tools (``{name, kind: function, description, parameters: [{name, kind,
  description, enumValues}]}``) become ``{type: function, function: {name, description,
  parameters: {type: object, properties, required}}}``.
- Dotprompt tools are names of tools defined in code (``tools: [lookup]``): the file holds
  no definition, so nothing is counted (the value is ``None``).
- GitHub Models ``responseFormat: json_schema`` with ``jsonSchema`` (JSON text or a
  mapping) becomes OpenAI's ``{type: json_schema, json_schema: ...}``, as both runners
  send it (``buildResponseFormat`` in actions/ai-inference ``src/helpers.ts``;
  ``BuildChatCompletionOptions`` in gh-models). Without ``responseFormat: json_schema``
  neither sends the schema.
- Prompty ``outputs`` (a list of ``{name, kind, description, required}``, or v1's mapping
  of name to ``{type, description}``) become an object schema.
- Dotprompt ``output.schema`` in Picoschema becomes JSON Schema as Genkit's
  ``picoschema.ts`` does; a schema that is already JSON Schema is kept.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from budgetlens.formats.model import Located

#: Picoschema's scalar types (``picoschema.ts``: ``JSON_SCHEMA_SCALAR_TYPES``).
PICO_SCALARS = ("string", "boolean", "null", "number", "integer", "any")


def _with_value(loc: Located, value: Any) -> Located:
    return Located(value, loc.key, loc.range)


def openai_tools(loc: Located | None) -> Located | None:
    """The tools at ``loc`` as OpenAI definitions (value ``None``: only names, defined in
    code; ``None``: no tools)."""
    if loc is None or not isinstance(loc.value, list) or not loc.value:
        return None
    if all(isinstance(t, str) for t in loc.value):
        return _with_value(loc, None)
    return _with_value(loc, [_tool(t) for t in loc.value])


def _tool(tool: Any) -> Any:
    if not isinstance(tool, Mapping) or tool.get("type") == "function" \
            or not isinstance(tool.get("parameters", []), list):
        return tool
    fn: dict[str, Any] = {"name": tool.get("name")}
    if tool.get("description") is not None:
        fn["description"] = tool.get("description")
    fn["parameters"] = _object_of(tool.get("parameters") or [])
    return {"type": "function", "function": fn}


def _object_of(entries: Any) -> dict[str, Any]:
    """Prompty's list (or v1 mapping) of named properties as an object schema."""
    if isinstance(entries, Mapping):
        entries = [{"name": k, **(v if isinstance(v, Mapping) else {"type": v})}
                   for k, v in entries.items()]
    props: dict[str, Any] = {}
    required: list[str] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
            continue
        prop: dict[str, Any] = {"type": str(entry.get("kind") or entry.get("type")
                                            or "string")}
        if entry.get("description") is not None:
            prop["description"] = entry["description"]
        enum = entry.get("enumValues", entry.get("enum"))
        if isinstance(enum, list):
            prop["enum"] = enum
        props[entry["name"]] = prop
        if entry.get("required") is True:
            required.append(entry["name"])
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


def github_schema(schema: Located | None, response_format: Located | None) -> Located | None:
    """``jsonSchema`` when ``responseFormat`` is ``json_schema``, as OpenAI's response format
    (JSON text that does not parse: ``None``, nothing counted: both runners refuse it)."""
    if schema is None or response_format is None or response_format.value != "json_schema":
        return None
    value = schema.value
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError:
            return None
    if not isinstance(value, Mapping):
        return None
    if "schema" not in value:  # a bare schema
        return _with_value(schema, dict(value))
    return _with_value(schema, {"type": "json_schema", "json_schema": dict(value)})


def prompty_outputs(loc: Located | None) -> Located | None:
    """Prompty's ``outputs`` as an object schema (a JSON Schema written there: as is)."""
    if loc is None or not loc.value:
        return None
    if isinstance(loc.value, Mapping) and "properties" in loc.value:
        return _with_value(loc, dict(loc.value))
    return _with_value(loc, _object_of(loc.value))


def dotprompt_schema(loc: Located | None) -> Located | None:
    """Dotprompt's ``output.schema`` as JSON Schema (``picoschema``)."""
    if loc is None or loc.value is None:
        return None
    return _with_value(loc, picoschema(loc.value))


def picoschema(schema: Any) -> Any:
    """Picoschema as JSON Schema, by the rules of ``PicoschemaParser.parse`` in
    google/dotprompt's ``js/src/picoschema.ts`` (commit 4532bb1). Where that throws, this
    reads on: a named schema (a non-scalar type name, registered in code) becomes ``{}``
    (with its description), a parenthetical type other than array, object and enum is read
    as an object."""
    if isinstance(schema, str):
        return _scalar(schema)
    if isinstance(schema, Mapping):
        if schema.get("type") in (*PICO_SCALARS, "object", "array"):  # ``isJSONSchema``
            return dict(schema)
        if isinstance(schema.get("properties"), Mapping):
            return {**schema, "type": "object"}
    return _pico(schema)


def _description(text: str) -> tuple[str, str | None]:
    if "," not in text:
        return text, None
    kind, rest = text.split(",", 1)  # ``extractDescription``: /(.*?), *(.*)$/
    return kind, rest.lstrip(" ")


def _scalar(text: str) -> dict[str, Any]:
    kind, description = _description(text)
    out: dict[str, Any] = {} if kind == "any" or kind not in PICO_SCALARS else {"type": kind}
    if description:
        out["description"] = description
    return out


def _nullable(prop: dict[str, Any]) -> dict[str, Any]:
    if isinstance(prop.get("type"), str):
        prop["type"] = [prop["type"], "null"]
    return prop


def _pico(obj: Any) -> dict[str, Any]:
    if isinstance(obj, str):
        return _scalar(obj)
    if not isinstance(obj, Mapping):
        return {}
    props: dict[str, Any] = {}
    required: list[str] = []
    schema: dict[str, Any] = {"type": "object", "properties": props, "required": required,
                              "additionalProperties": False}
    for key, value in obj.items():
        key = str(key)
        if key == "(*)":
            schema["additionalProperties"] = _pico(value)
            continue
        name, optional, prop = _pico_property(key, value)
        if not optional:
            required.append(name)
        props[name] = prop
    if not required:
        del schema["required"]
    return schema


def _pico_property(key: str, value: Any) -> tuple[str, bool, dict[str, Any]]:
    """One Picoschema key (``name?(type, description)``): its name, whether it is
    optional, and its schema."""
    name, _, info = key.partition("(")
    optional = name.endswith("?")
    name = name[:-1] if optional else name
    if not info:
        prop = _pico(value)
        return name, optional, _nullable(prop) if optional else prop
    kind, description = _description(info[:-1] if info.endswith(")") else info)
    if kind == "array":
        prop = {"type": ["array", "null"] if optional else "array", "items": _pico(value)}
    elif kind == "enum":
        items = list(value) if isinstance(value, list) else []
        prop = {"enum": items + ([None] if optional and None not in items else [])}
    else:  # object (or a type Genkit refuses: read as an object)
        prop = _pico(value)
        prop = _nullable(prop) if optional else prop
    if description:
        prop["description"] = description
    return name, optional, prop
