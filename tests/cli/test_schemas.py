"""The JSON Schemas of config.json and of pipelines, ready for SchemaStore (issue 35): the
committed copies are what ``budgetlens schema`` prints, each has ``$id`` (the address of its
committed copy), ``$schema``, a title and a description; the examples validate and planted
mistakes do not; the schema and ``budgetlens check`` agree on config.json; and
schemas/catalog.json is a valid SchemaStore catalog pointing at the two."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from budgetlens_cli.main import main

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CONTRACT = ROOT / "shared_core" / "budgetlens" / "contract"
CONFIG_COPY = CONTRACT / "config.schema.json"
PIPELINE_COPY = CONTRACT / "pipeline.schema.json"
CATALOG = ROOT / "schemas" / "catalog.json"
RAW = "https://raw.githubusercontent.com/budgetlens/budgetlens/main/"


def _load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return loaded


@pytest.fixture(autouse=True)
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PIPELINE_LIMITS_POLICY", raising=False)
    monkeypatch.delenv("APP_DEVELOPMENT", raising=False)
    return tmp_path


def test_the_committed_config_schema_is_what_budgetlens_schema_config_prints(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "config"]) == 0
    printed = capsys.readouterr().out
    assert CONFIG_COPY.read_text("utf-8") == printed, (
        "regenerate it: budgetlens schema config -o shared_core/budgetlens/contract/"
        "config.schema.json")
    assert main(["schema", "config", "-o", "out.json"]) == 0
    assert Path("out.json").read_text("utf-8") == printed
    assert main(["schema"]) == 0  # the default is still the pipeline's
    assert capsys.readouterr().out == PIPELINE_COPY.read_text("utf-8")


@pytest.mark.parametrize("copy", [CONFIG_COPY, PIPELINE_COPY], ids=["config", "pipeline"])
def test_each_schema_is_ready_for_schemastore(copy: Path) -> None:
    schema = _load(copy)
    jsonschema.Draft7Validator.check_schema(schema)
    assert schema["$schema"] == "http://json-schema.org/draft-07/schema#"  # SchemaStore's advice
    # $id: where the committed copy is served from, so it names this very file
    assert schema["$id"] == RAW + copy.relative_to(ROOT).as_posix()
    assert schema["title"].startswith("budgetlens ")
    assert len(schema["description"]) > 80
    assert schema["type"] == "object"
    assert all(p.get("description") for p in schema["properties"].values())


def test_the_examples_validate_and_planted_mistakes_do_not() -> None:
    config = jsonschema.Draft7Validator(_load(CONFIG_COPY))
    pipeline = jsonschema.Draft7Validator(_load(PIPELINE_COPY))
    example = _load(ROOT / "examples" / "config.json")
    assert [e.message for e in config.iter_errors(example)] == []
    paths = sorted((ROOT / "examples" / "pipelines").glob("*.yaml"))
    assert len(paths) == 5
    for path in paths:
        assert [e.message for e in pipeline.iter_errors(yaml.safe_load(path.read_text("utf-8")))
                ] == [], path.name
    # the window quoted, as a hand-edited file has it
    planted = {**example, "model_context_window": "8192"}
    [error] = config.iter_errors(planted)
    assert list(error.absolute_path) == ["model_context_window"]
    # the report's context quoted in a copy of long_report.yaml
    text = (ROOT / "examples" / "pipelines" / "long_report.yaml").read_text("utf-8")
    assert "max_context_tokens: 6144" in text
    doc = yaml.safe_load(text.replace("max_context_tokens: 6144", 'max_context_tokens: "6144"'))
    error = jsonschema.exceptions.best_match(pipeline.iter_errors(doc))
    assert error is not None
    assert list(error.absolute_path) == ["settings", "max_context_tokens"]


# config.json documents, and whether `budgetlens check` takes them without an error (worked
# out by hand from docs/pipeline-format.md: a window is typed or comes from model)
CONFIGS: list[tuple[str, dict[str, Any], bool]] = [
    ("model only", {"model": "gpt-4o"}, True),
    ("typed window", {"model_context_window": 16384, "model_max_tokens": 512}, True),
    ("the misspelling", {"model": "gpt-4o", "developement": True}, True),
    ("an editor's $schema key", {"$schema": RAW + "shared_core/budgetlens/contract/"
                                 "config.schema.json", "model": "gpt-4o"}, True),
    ("serving and targets", {"model": "gpt-4o", "serving": {"max_model_len": 32768},
                             "targets": ["gpt-4o-mini"]}, True),
    ("no window at all", {"prompts_dir": "prompts"}, False),
    ("quoted window", {"model_context_window": "16384"}, False),
    ("zero window", {"model_context_window": 0}, False),
    ("development as text", {"model": "gpt-4o", "development": "yes"}, False),
    ("negative overhead", {"model": "gpt-4o", "format_overhead_tokens": -1}, False),
    ("models_file", {"model": "gpt-4o", "models_file": "models.json"}, True),
    ("blank models_file", {"model": "gpt-4o", "models_file": " "}, False),
]


@pytest.mark.parametrize(("config", "valid"), [(c, v) for _, c, v in CONFIGS],
                         ids=[name for name, _, _ in CONFIGS])
def test_the_config_schema_and_check_agree(
        capsys: pytest.CaptureFixture[str], config: dict[str, Any], valid: bool) -> None:
    assert main(["init", "ws"]) == 0  # a pipeline that fits a 16,384 window and gpt-4o
    Path("ws/config.json").write_text(json.dumps(config), "utf-8")
    capsys.readouterr()
    checked = main(["check", "ws", "--no-cache", "--format", "json"])
    errors = [d for d in json.loads(capsys.readouterr().out)["diagnostics"]
              if d["severity"] == "error"]
    schema_ok = jsonschema.Draft7Validator(_load(CONFIG_COPY)).is_valid(config)
    assert (schema_ok, checked == 0 and not errors) == (valid, valid), errors


def test_the_catalog_entries_are_a_valid_schemastore_catalog() -> None:
    catalog = _load(CATALOG)
    jsonschema.Draft7Validator(_load(HERE / "schemas" / "schemastore-schema-catalog.json")
                               ).validate(catalog)
    entries = {e["name"]: e for e in catalog["schemas"]}
    assert set(entries) == {"budgetlens config.json", "budgetlens pipeline"}
    assert entries["budgetlens config.json"]["url"] == _load(CONFIG_COPY)["$id"]
    assert entries["budgetlens pipeline"]["url"] == _load(PIPELINE_COPY)["$id"]
    for entry in entries.values():
        assert (ROOT / entry["url"].removeprefix(RAW)).is_file()
        # config.json and pipelines/*.yaml are generic names: SchemaStore refuses generic
        # fileMatch patterns, so users pick the schema (docs/schemas.md)
        assert entry["fileMatch"] == []


def test_docs_schemas_md_shows_the_catalog_entries() -> None:
    doc = (ROOT / "docs" / "schemas.md").read_text("utf-8")
    for entry in _load(CATALOG)["schemas"]:
        assert json.dumps(entry, indent=2) in doc

