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
  parameters: {type: object, properties, required}}}`` as prompty 2.1's OpenAI executor
  (``providers/openai/executor.py``, ``_tools_to_wire``) sends them; other kinds
  (``mcp``, ``openapi``) are not sent by it, and not counted.
- Dotprompt tools are names of tools defined in code (``tools: [lookup]``): the file holds
  no definition, so nothing is counted (the value is ``None``).
- GitHub Models ``responseFormat: json_schema`` with ``jsonSchema`` (JSON text or a
  mapping) becomes OpenAI's ``{type: json_schema, json_schema: ...}``, as both runners
  send it (``buildResponseFormat`` in actions/ai-inference ``src/helpers.ts``;
  ``BuildChatCompletionOptions`` in gh-models). Without ``responseFormat: json_schema``
  neither sends the schema.
- Prompty ``outputs`` (a list of ``{name, kind, description, required}``, or v1's mapping
  of name to ``{type, description}``) become the strict ``json_schema`` response format
  prompty 2.1 sends (``_output_schema_to_wire``).
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
    tools = [t for t in loc.value
             if not (isinstance(t, Mapping) and t.get("kind") not in (None, "function"))]
    return _with_value(loc, [_tool(t) for t in tools]) if tools else None


def _tool(tool: Any) -> Any:
    """A Prompty v2 tool as prompty 2.1's ``_tools_to_wire`` sends it (an OpenAI-shaped
    definition, or one this cannot read: as written)."""
    if not isinstance(tool, Mapping) or tool.get("type") == "function" \
            or not isinstance(tool.get("parameters", []), list):
        return tool
    strict = tool.get("strict") is True
    fn: dict[str, Any] = {"name": tool.get("name")}
    if tool.get("description"):
        fn["description"] = tool["description"]
    bound = {b.get("name") for b in tool.get("bindings") or [] if isinstance(b, Mapping)}
    params = [p for p in tool.get("parameters") or []
              if isinstance(p, Mapping) and p.get("name") not in bound]
    if params:
        fn["parameters"] = _object_of(params, strict)
    if strict:
        fn["strict"] = True
        if "parameters" in fn:
            fn["parameters"]["additionalProperties"] = False
    return {"type": "function", "function": fn}


def _entries(entries: Any) -> list[Mapping[str, Any]]:
    """Prompty's properties: a list of ``{name, kind, ...}``, or v1's mapping of a name to
    ``{type, description}`` (or to a type name)."""
    if isinstance(entries, Mapping):
        entries = [{"name": k, **(v if isinstance(v, Mapping) else {"type": v})}
                   for k, v in entries.items()]
    return [e for e in entries if isinstance(e, Mapping) and isinstance(e.get("name"), str)] \
        if isinstance(entries, list) else []


def _object_of(entries: Any, strict: bool) -> dict[str, Any]:
    """Prompty's properties as prompty 2.1's ``_schema_to_wire`` makes them an object
    schema (strict: every property required, the optional ones nullable)."""
    props: dict[str, Any] = {}
    required: list[str] = []
    for entry in _entries(entries):
        props[entry["name"]] = _property(entry, strict and entry.get("required") is not True,
                                         strict)
        if strict or entry.get("required") is True:
            required.append(entry["name"])
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


#: prompty 2.1's ``kind_map`` (``providers/openai/executor.py``).
_PROMPTY_KINDS = {"string": "string", "integer": "integer", "float": "number",
                  "number": "number", "boolean": "boolean", "array": "array",
                  "object": "object"}


def _property(entry: Mapping[str, Any], optional: bool, strict: bool) -> dict[str, Any]:
    """One property as prompty 2.1's ``_property_to_json_schema`` writes it (unions left
    out: read as untyped)."""
    kind = entry.get("kind") or entry.get("type")
    json_type = _PROMPTY_KINDS.get(str(kind))
    schema: dict[str, Any] = {"type": json_type} if json_type else {}
    if entry.get("description"):
        schema["description"] = entry["description"]
    enum = entry.get("enumValues", entry.get("enum"))
    if isinstance(enum, list) and enum:
        schema["enum"] = list(enum)
    if kind == "array":
        items = entry.get("items")
        schema["items"] = _property(items, False, strict) if isinstance(items, Mapping) \
            else {"type": "string"}
    if kind == "object":
        inner = _object_of(entry.get("properties") or [], strict)
        schema["properties"] = inner["properties"]
        if "required" in inner:
            schema["required"] = inner["required"]
        schema["additionalProperties"] = False
    if optional or entry.get("nullable") is True:
        if isinstance(schema.get("type"), str):
            schema["type"] = [schema["type"], "null"]
        if isinstance(schema.get("enum"), list) and None not in schema["enum"]:
            schema["enum"].append(None)
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
    """Prompty's ``outputs`` as prompty 2.1's ``_output_schema_to_wire`` sends them: a
    strict ``json_schema`` response format named ``structured_output`` (a JSON Schema
    written there: as is)."""
    if loc is None or not loc.value:
        return None
    if isinstance(loc.value, Mapping) and "properties" in loc.value:
        return _with_value(loc, dict(loc.value))
    entries = _entries(loc.value)
    if not entries:
        return None
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {e["name"]: _property(e, e.get("required") is not True, True)
                       for e in entries},
        "additionalProperties": False, "required": [e["name"] for e in entries]}
    return _with_value(loc, {"type": "json_schema", "json_schema": {
        "name": "structured_output", "strict": True, "schema": schema}})


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
