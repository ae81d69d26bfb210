"""The ``settings.injection`` policy read without pydantic (contract/injection_settings.py)
against the policy model (``UnifiedContextBudgetPolicy``, pydantic).

- a value the light read takes, the model takes too and keeps as the same value and type;
- the merged policy has the model's values (and JSON) for every generated block;
- ``check_injection`` gives the same diagnostics and JSON with the light read as with the
  model alone (the light read patched to take nothing);
- the keys it reads (from the committed JSON Schema) are the model's, with its defaults.
"""

from __future__ import annotations

import pickle
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from budgetlens.assembly.unified_policy import POLICY_FIELDS, UnifiedContextBudgetPolicy
from budgetlens.contract import injection_settings as injection
from budgetlens.contract.check import check_pipeline
from budgetlens.files import DiskFiles
from budgetlens.serialize import to_jsonable
from tests.core.contract.helpers import make_workspace

FAST = settings(deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.integers(0, 10_000),
    st.integers(2**62, 2**70), st.floats(), st.floats(0, 1), st.floats(-1, 2),
    st.sampled_from([0, 1, 0.0, 1.0, 1.5, -0.0, 6000, "0.5", "1"]), st.text(max_size=3),
    st.lists(st.integers(), max_size=2))


def typed(value: Any) -> tuple[str, Any]:
    return (type(value).__name__, value)


def test_the_keys_are_the_models() -> None:
    keys = injection.policy_keys()
    assert tuple(keys) == POLICY_FIELDS == tuple(UnifiedContextBudgetPolicy.model_fields)
    default = UnifiedContextBudgetPolicy()
    made = injection.merged_policy({})
    assert [typed(getattr(made, k)) for k in keys] == [typed(getattr(default, k)) for k in keys]
    assert to_jsonable(made) == default.model_dump(mode="json")
    assert pickle.loads(pickle.dumps(made)) == made  # the CLI's workers pickle reports


@FAST
@given(st.sampled_from(POLICY_FIELDS), VALUES)
def test_a_value_the_light_read_takes_the_model_takes_alike(key: str, value: Any) -> None:
    light = injection.light_value(key, value)
    try:
        kept = getattr(UnifiedContextBudgetPolicy.model_validate({key: value}), key)
    except ValidationError:
        assert light is injection._BAD
        return
    if light is not injection._BAD:
        assert typed(light) == typed(kept)


@pytest.mark.parametrize(("key", "value", "taken"), [
    ("max_injection_tokens_absolute", 0, True),
    ("max_injection_tokens_absolute", -1, False),
    ("max_injection_tokens_absolute", True, False),
    ("max_injection_tokens_absolute", 1.0, False),
    ("max_injection_tokens_pct_of_context", 0.2, True),
    ("max_injection_tokens_pct_of_context", 1, True),  # kept as 1.0, as the model does
    ("max_injection_tokens_pct_of_context", 2, False),
    ("max_injection_tokens_pct_of_context", float("nan"), False),
    ("max_injection_tokens_pct_of_context", "0.2", False),
    ("schema_version", 1, True),
    ("schema_version", True, False),  # the model takes it (as 1): left to it
    ("schema_version", 2, False),
    ("no_such_key", 1, False),
])
def test_written_out_values(key: str, value: Any, taken: bool) -> None:
    assert (injection.light_value(key, value) is not injection._BAD) is taken
    if taken:
        kept = getattr(UnifiedContextBudgetPolicy.model_validate({key: value}), key)
        assert typed(injection.light_value(key, value)) == typed(kept)


@FAST
@given(st.dictionaries(st.sampled_from(POLICY_FIELDS), VALUES, max_size=5))
def test_the_merged_policy_has_the_models_values(values: dict[str, Any]) -> None:
    try:
        model = UnifiedContextBudgetPolicy.model_validate(values)
    except ValidationError:
        return  # check_injection merges only keys that validate one by one
    made = injection.merged_policy(values)
    assert [typed(getattr(made, k)) for k in POLICY_FIELDS] == \
        [typed(getattr(model, k)) for k in POLICY_FIELDS]
    assert to_jsonable(made) == model.model_dump(mode="json")


PIPELINE = """settings:
  max_context_tokens: 1000
  injection: {block}
steps:
  - id: a
    type: call_model
    prompt_key: p
    max_output_tokens: 100
"""


@FAST
@given(st.dictionaries(st.one_of(st.sampled_from(POLICY_FIELDS), st.just("unknown")), VALUES,
                       max_size=4))
def test_check_injection_gives_the_models_results(tmp_path_factory: pytest.TempPathFactory,
                                                  block: dict[str, Any]) -> None:
    root = tmp_path_factory.mktemp("ws")
    text = PIPELINE.format(block=yaml.safe_dump(block, default_flow_style=True).strip())
    make_workspace(root, config={"model_context_window": 8000},
                   pipelines={"p.yaml": text}, prompts={"p.txt": "You answer."})
    path = str(Path(root, "pipelines", "p.yaml"))
    found = check_pipeline(path, files=DiskFiles())
    with mock.patch.object(injection, "light_value", lambda key, value: injection._BAD):
        expected = check_pipeline(path, files=DiskFiles())
    assert found.injection is not None and expected.injection is not None
    assert found.injection.diagnostics == expected.injection.diagnostics
    assert to_jsonable(found.injection) == to_jsonable(expected.injection)
    assert found.diagnostics == expected.diagnostics
