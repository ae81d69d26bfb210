"""The shapes' light read (contract/shapes.py) against pydantic.

Expectations come from ``reference_models.py``: the pydantic models and the lenient
validation as they were before the shapes, frozen. For the documents of the JSON Schema
tests and for generated ones (strings, integers with 0, negatives, bools, floats and big
ones, None, nested mappings, lists, unknown keys, the ``developement`` alias, keys that are
not strings):

- whenever the light read accepts a document, pydantic accepts it with the same field
  values (types included), kept keys, fields set and dumps;
- the lenient results (values and field errors) are pydantic's, for every document;
- ``load_pipeline_text`` and ``load_config`` give the same diagnostics and values as with the
  reference validation patched in;
- the models made from the shapes describe the same JSON Schema and read the same keys.
"""

from __future__ import annotations

import functools
import json
import pickle
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import AliasChoices, BaseModel

from budgetlens import codes
from budgetlens.contract import config as config_module
from budgetlens.contract import pipeline as pipeline_module
from budgetlens.contract.config import PromptMapping, ServingLimits, WorkspaceConfig, load_config
from budgetlens.contract.near_miss import model_keys
from budgetlens.contract.pipeline import Pipeline, Settings, Step, UserParts, load_pipeline_text
from budgetlens.contract.shapes import BOOL, INT, SHAPE, STR, STRS, Shape
from budgetlens.contract.validation import validate_lenient
from budgetlens.serialize import to_jsonable
from tests.core.contract import reference_models as ref
from tests.core.contract.test_json_schema import CASES

SHAPES_AND_REFERENCES: list[tuple[type[Shape], type[BaseModel]]] = [
    (ServingLimits, ref.ServingLimits), (PromptMapping, ref.PromptMapping),
    (WorkspaceConfig, ref.WorkspaceConfig),
    (UserParts, ref.UserParts), (Step, ref.Step), (Settings, ref.Settings),
    (Pipeline, ref.Pipeline)]
REFERENCE = {shape.__name__: model for shape, model in SHAPES_AND_REFERENCES}
pytestmark = pytest.mark.filterwarnings("ignore:Generating overly large repr")
FAST = settings(deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---------------------------------------------------------------------------- comparing
def typed(value: Any) -> Any:
    """``value`` with the type of every scalar (``True`` is not ``1``) and dict key order."""
    if isinstance(value, dict):
        return [(typed(k), typed(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [typed(v) for v in value]
    return (type(value).__name__, value)


def snap(value: Any) -> Any:
    """A validated value of either kind: each model's class name, its fields (read by the
    reference model's field names), kept keys and fields set."""
    if isinstance(value, list):
        return [snap(v) for v in value]
    if isinstance(value, (BaseModel, Shape)):
        fields = REFERENCE[type(value).__name__].model_fields
        return (type(value).__name__, [(name, snap(getattr(value, name))) for name in fields],
                typed(value.model_extra), sorted(value.model_fields_set))
    return typed(value)


def errors_of(errors: list[Any]) -> list[tuple[Any, str, str]]:
    return [(e.path, e.message, e.kind) for e in errors]


def reference_lenient(model: type[Any], data: dict[str, Any]) -> tuple[Any, list[Any]]:
    return ref.validate_lenient(REFERENCE[model.__name__], data)


def agree(shape: type[Shape], doc: Any) -> bool:
    """Compare the light read of ``doc`` with pydantic's; whether the light read took it."""
    model = REFERENCE[shape.__name__]
    before = repr(doc)
    light = shape.light_validate(doc)
    assert repr(doc) == before
    if isinstance(doc, dict):
        found, errors = validate_lenient(shape, doc)
        expected, expected_errors = ref.validate_lenient(model, doc)
        assert (snap(found), errors_of(errors)) == (snap(expected), errors_of(expected_errors))
        assert repr(doc) == before
    if light is None:
        return False
    accepted = model.model_validate(doc)  # raises when pydantic does not accept it
    assert snap(light) == snap(accepted)
    for unset in (True, False):
        assert typed(light.model_dump(exclude_unset=unset)) == \
            typed(accepted.model_dump(exclude_unset=unset))
    assert light.model_dump(mode="json") == accepted.model_dump(mode="json")
    return True


# --------------------------------------------------------------------------- generating
LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 5), st.integers(2**62, 2**70),
    st.floats(allow_nan=False, allow_infinity=False, width=32), st.text(max_size=4),
    st.sampled_from(["4096", "call_model", "yes", "\ud800"]))
ODD = st.one_of(LEAVES, st.lists(LEAVES, max_size=2),
                st.dictionaries(st.text(max_size=3), LEAVES, max_size=2))
UNKNOWN_KEYS = ("temperature", "model", "_private", "max_token", "x-y", "model_config")
PURE: dict[str, st.SearchStrategy[Any]] = {
    STR: st.text(max_size=6), INT: st.integers(1, 10), BOOL: st.booleans(),
    STRS: st.lists(st.text(max_size=3), max_size=3)}
GOOD: dict[str, st.SearchStrategy[Any]] = {
    STR: st.text(max_size=6), INT: st.integers(-2, 10), BOOL: st.booleans(),
    STRS: st.lists(st.one_of(st.text(max_size=3), st.text(max_size=3), LEAVES), max_size=3)}


def keys_of(model: type[BaseModel]) -> dict[str, str]:
    """Every key the reference model reads (names and aliases), with its field's name."""
    out: dict[str, str] = {}
    for name, info in model.model_fields.items():
        alias = info.validation_alias
        for key in (alias.choices if isinstance(alias, AliasChoices) else [name]):
            out[str(key)] = name
    return out


@functools.cache
def mapping_of(shape: type[Shape], pure: bool = False) -> st.SearchStrategy[dict[Any, Any]]:
    """Mappings of ``shape``: any subset of its keys. A ``pure`` one has only values of
    the fields' kinds (and unknown keys); else each value is one two thirds of the time,
    and one mapping in four has a key that is not a string."""
    kinds = {spec.name: spec for spec in shape.FIELDS}
    optional: dict[Any, st.SearchStrategy[Any]] = {}
    for key, name in keys_of(REFERENCE[shape.__name__]).items():
        spec = kinds[name]
        good: st.SearchStrategy[Any]
        if spec.shape is not None:
            inner = mapping_of(spec.shape, pure)
            good = inner if spec.kind == SHAPE else st.lists(
                inner if pure else st.one_of(inner, inner, ODD), max_size=3)
        else:
            good = (PURE if pure else GOOD)[spec.kind]
        optional[key] = good if pure else st.one_of(good, good, ODD)
    for key in UNKNOWN_KEYS:
        optional.setdefault(key, ODD)
    plain = st.fixed_dictionaries({}, optional=optional)
    if pure:
        return plain
    odd_key = st.tuples(plain, st.sampled_from([1, None, True, 2.5]), LEAVES).map(
        lambda t: {**t[0], t[1]: t[2]})
    return st.one_of(plain, plain, plain, odd_key)


def documents(shape: type[Shape]) -> st.SearchStrategy[dict[Any, Any]]:
    return st.one_of(mapping_of(shape, True), mapping_of(shape))


def run_generated(shape: type[Shape], examples: int,
                  check: Callable[[Any], bool]) -> tuple[int, int]:
    """Run ``check`` on ``examples`` generated mappings of ``shape``: (accepted, not)."""
    counts = [0, 0]

    @settings(FAST, max_examples=examples)
    @given(documents(shape))
    def run(doc: Any) -> None:
        counts[0 if check(doc) else 1] += 1

    run()
    return counts[0], counts[1]


# ------------------------------------------------------------------------------- tests
@pytest.mark.parametrize(("doc", "valid"), [(d, v) for _, d, v in CASES],
                         ids=[name for name, _, _ in CASES])
def test_the_json_schema_cases_agree(doc: Any, valid: bool) -> None:
    assert agree(Pipeline, doc) is valid  # every valid case is taken by the light read


@pytest.mark.parametrize(("shape", "examples"), [
    (Pipeline, 400), (WorkspaceConfig, 400), (Step, 200), (Settings, 150),
    (ServingLimits, 100), (UserParts, 60)], ids=lambda v: getattr(v, "__name__", str(v)))
def test_generated_documents_agree(shape: type[Shape], examples: int) -> None:
    accepted, left = run_generated(shape, examples, lambda doc: agree(shape, doc))
    # both ways are taken often: the comparison is not empty
    assert accepted >= examples // 10 and left >= examples // 10, (accepted, left)


@pytest.mark.parametrize(("shape", "doc", "light"), [
    (WorkspaceConfig, {"developement": True}, True),
    (WorkspaceConfig, {"development": False, "model_context_window": 1}, True),
    (WorkspaceConfig, {"development": True, "developement": False}, False),
    (WorkspaceConfig, {"developement": "yes"}, False),
    (WorkspaceConfig, {"prompts_dir": None}, False),  # not optional
    (WorkspaceConfig, {"format_overhead_tokens": 0, "prompts_dir": "p"}, True),
    (WorkspaceConfig, {"targets": ["gpt-4o", 3]}, False),
    (WorkspaceConfig, {"targets": ("gpt-4o",)}, False),  # pydantic takes it; left to it
    (WorkspaceConfig, {"serving": {"num_ctx": 0}}, False),
    (WorkspaceConfig, {"serving": {"num_ctx": 1, "other": [1]}}, True),
    (Step, {"max_tokens": True}, False),  # a bool is not an integer
    (Step, {"max_tokens": 1.0}, False),
    (Step, {"max_tokens": 10**30, "use_history": False}, True),
    (Step, {"use_history": 1}, False),
    (Step, {"id": "\ud800", 7: "x"}, False),
    (Settings, {"max_history_tokens": 0, "injection": {"a": 1}}, True),
    (Settings, {"max_context_tokens": 0}, False),
    (Pipeline, {"steps": [{}, None]}, False),
    (Pipeline, {"steps": [], "settings": None, "extends": None}, True),
])
def test_written_out_cases(shape: type[Shape], doc: dict[Any, Any], light: bool) -> None:
    assert agree(shape, doc) is light


def test_one_mapping_reached_twice_is_read_twice() -> None:
    shared = {"id": "a", "max_tokens": 3}
    doc = {"steps": [shared, shared]}
    assert agree(Pipeline, doc)
    found = Pipeline.light_validate(doc)
    assert found is not None and found.steps is not None
    first, second = found.steps
    assert first is not second and first == second


def _pipeline_texts(doc: dict[Any, Any]) -> str:
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=False)


def test_load_pipeline_text_gives_the_reference_results() -> None:
    def check(doc: Any) -> bool:
        text = _pipeline_texts(doc)
        found = load_pipeline_text("p.yaml", text)
        with mock.patch.object(pipeline_module, "validate_lenient", reference_lenient):
            expected = load_pipeline_text("p.yaml", text)
        assert found.diagnostics == expected.diagnostics
        assert found.invalid == expected.invalid
        assert snap(found.model) == snap(expected.model)
        return not any(d.code in (codes.INVALID_VALUE, codes.CONTEXT_INVALID)
                       for d in found.diagnostics)

    accepted, left = run_generated(Pipeline, 200, check)
    assert accepted >= 20 and left >= 20, (accepted, left)


def test_load_config_gives_the_reference_results() -> None:
    def check(doc: Any) -> bool:
        text = json.dumps({str(k): v for k, v in doc.items()}, ensure_ascii=False)
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: written escaped, as JSON allows
            text = json.dumps({str(k): v for k, v in doc.items()})
        found = load_config("config.json", text)
        with mock.patch.object(config_module, "validate_lenient", reference_lenient):
            expected = load_config("config.json", text)
        assert found.diagnostics == expected.diagnostics
        assert found.window_ok == expected.window_ok
        assert snap(found.config) == snap(expected.config)
        return not any(d.code == codes.CONFIG_VALUE_INVALID for d in found.diagnostics)

    accepted, left = run_generated(WorkspaceConfig, 200, check)
    assert accepted >= 20 and left >= 20, (accepted, left)


def test_the_examples_are_read_without_pydantic_and_as_pydantic_reads_them() -> None:
    from pathlib import Path
    root = Path(__file__).resolve().parents[3] / "examples"
    config = json.loads((root / "config.json").read_text(encoding="utf-8"))
    assert "developement" in config  # the alias, read by the light read too
    assert agree(WorkspaceConfig, config)
    for path in sorted((root / "pipelines").glob("*.yaml")):
        assert agree(Pipeline, yaml.safe_load(path.read_text(encoding="utf-8"))), path.name


@pytest.mark.parametrize(("shape", "model"), SHAPES_AND_REFERENCES,
                         ids=[s.__name__ for s, _ in SHAPES_AND_REFERENCES])
def test_the_made_models_are_the_reference_models(shape: type[Shape],
                                                  model: type[BaseModel]) -> None:
    for mode in ("validation", "serialization"):
        assert json.dumps(shape.model_json_schema(mode=mode)) == \
            json.dumps(model.model_json_schema(mode=mode))
    assert shape.pydantic().model_config == model.model_config
    assert model_keys(shape) == model_keys(model)


def test_known_keys_written_out() -> None:
    assert model_keys(WorkspaceConfig) == (
        "model", "model_context_window", "model_max_tokens", "model_max_output_tokens",
        "prompts_dir", "development", "format_overhead_tokens", "tokenizer",
        "min_context_tokens", "min_output_tokens", "serving", "targets", "prompt_mappings",
        "developement")
    assert model_keys(Settings, "injection") == (
        "max_context_tokens", "max_history_tokens", "budget_safety_margin_tokens",
        "min_context_tokens", "min_output_tokens", "injection")


def test_light_values_pickle_compare_print_and_serialise_as_pydantic_ones() -> None:
    doc = {"extends": "b.yaml", "settings": {"max_context_tokens": 9, "k": [1]},
           "steps": [{"id": "a", "user_parts": {"template": "x"}, "temperature": 0.5}]}
    light = Pipeline.light_validate(doc)
    expected = ref.Pipeline.model_validate(doc)
    assert light is not None
    assert pickle.loads(pickle.dumps(light)) == light
    assert light != Pipeline.light_validate({**doc, "extends": "c.yaml"})
    assert repr(light).replace("ref.", "") == repr(expected)
    assert to_jsonable(light) == to_jsonable(expected)
    # the dumps copy kept containers, as pydantic's do (the input stays the caller's)
    assert light.settings is not None and expected.settings is not None
    assert light.settings.model_extra["k"] is doc["settings"]["k"]  # type: ignore[index]
    assert expected.settings.model_dump()["k"] is not doc["settings"]["k"]  # type: ignore[index]
    assert light.settings.model_dump()["k"] is not doc["settings"]["k"]  # type: ignore[index]
    assert light.steps is not None
    assert getattr(light.steps[0], "temperature") == 0.5  # noqa: B009 - a kept key reads as an attribute, as in pydantic
    with pytest.raises(AttributeError):
        getattr(light.steps[0], "no_such_key")  # noqa: B009
    with pytest.raises(TypeError):
        hash(light)
