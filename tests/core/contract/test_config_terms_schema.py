"""The multi-model keys of config.json in its JSON Schema (issue 32): ``add_config_terms``
over the WorkspaceConfig shape's schema checks a model's own serving block, ``gateway``
(the names of the gateway table) and ``variant``, and leaves other keys allowed."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from budgetlens.contract.config import WorkspaceConfig
from budgetlens.contract.json_schema import add_config_terms

GOOD = {"model": "gpt-4o", "gateway": "github-models", "variant": "1m",
        "serving": {"num_ctx": 4096, "llama3.1:8b": {"num_ctx": 8192}}}


@pytest.mark.parametrize(("doc", "valid"), [
    (GOOD, True),
    ({"model": "gpt-4o", "gateway": "github-model"}, False),  # not in the gateway table
    ({"serving": {"llama3.1:8b": {"num_ctx": 0}}}, False),  # a model's block: limits > 0
    ({"serving": {"llama3.1:8b": {"num_ctx": "8192"}}}, False),
    ({"serving": {"note": "kept"}}, True),  # other keys are allowed
    ({"model_context_window": 8192, "retries": 3}, True),
])
def test_the_schema_checks_the_multi_model_keys(doc: dict[str, Any], valid: bool) -> None:
    schema = add_config_terms(WorkspaceConfig.model_json_schema(mode="validation"))
    errors = list(jsonschema.Draft7Validator(schema).iter_errors(doc))
    assert (not errors) is valid, [e.message for e in errors]
    assert {"gateway", "variant", "serving"} <= set(schema["properties"])
