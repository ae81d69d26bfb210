"""Clamps stay within their floors, or the step is an honest error.

Floors: ``min_context_tokens`` and ``min_output_tokens`` (pipeline settings, else config.json,
else half of the value as read). A plan never sets a value below its floor; a step that fits
only below them is BL052 under both policies, naming its largest term. Planning several
pipelines together takes every floor from the original files, so the result does not depend
on the order or the names of the files.

Token counts come from plain tiktoken (``tokens``); every sum is written out here. The
format overhead is 0 in the hand-computed cases and the margin the default 128.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from budgetlens.contract.plan import apply_plan, clamp_plan
from budgetlens.files import DiskFiles
from budgetlens.source import Severity
from budgetlens_cli.clamp_cmd import plan_all
from budgetlens_cli.main import build_parser, main
from tests.core.contract.helpers import check, codes_of, make_workspace, only, tokens

SYSTEM = "You are a helpful assistant."
MARGIN = 128


def t() -> int:
    """The fixed cost of every step here: the system prompt (no template, overhead 0)."""
    return tokens(SYSTEM)


def _ws(root: Path, pipelines: dict[str, str], window: int, **config: Any) -> Path:
    make_workspace(root, config={"model_context_window": window, "model_max_tokens": 500,
                                 "format_overhead_tokens": 0, "development": False, **config},
                   pipelines=pipelines, prompts={"sys.txt": SYSTEM})
    return root / "pipelines"


def _cli(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


# ------------------------------------------------------------ the 16384-token case
HISTORY_CASE = """\
settings:
  max_context_tokens: 12000
  max_history_tokens: 15000
steps:
  - id: chat
    type: call_model
    prompt_key: sys
    use_history: true
    max_output_tokens: 8000
  - id: summary
    type: call_model
    prompt_key: sys
    max_output_tokens: 1000
"""


@pytest.mark.parametrize("policy", ["fail_fast", "auto_clamp"])
def test_history_that_leaves_no_room_is_an_error_naming_history(tmp_path: Path,
                                                                 policy: str) -> None:
    path = _ws(tmp_path, {"p.yaml": HISTORY_CASE}, 16384) / "p.yaml"
    report = check(path, policy=policy)
    # floors: context 12000 // 2 = 6000, output of 'chat' 8000 // 2 = 4000
    # chat at its floors: t + 15000 + 6000 + 4000 + 128 = 25128 + t > 16384, over by 8744 + t
    diag = only(report, "BL052")
    assert diag.severity is Severity.ERROR and diag.step == "chat"
    assert (f"fixed {t()} + history 15000 + context floor 6000 + output floor 4000 + margin"
            f" 128 = {25128 + t()} > 16384 (over by {8744 + t()})") in diag.message
    # 15000 / 16384 = 0.9155: 92%
    assert "history 15000 is 92% of the 16384 window: lower max_history_tokens" in diag.message
    # 'summary' fits as it is: t + 0 + 12000 + 1000 + 128 = 13128 + t <= 16384
    assert 13128 + t() <= 16384
    assert "BL050" not in codes_of(report)
    # nothing is lowered: not the context the healthy 'summary' uses, not chat's output
    assert report.clamp.empty and report.clamp.unfit == ("chat",)
    assert clamp_plan(report, files=DiskFiles()).empty


@pytest.mark.parametrize("policy", ["fail_fast", "auto_clamp"])
def test_clamp_command_refuses_with_the_error_and_exit_1(tmp_path: Path, policy: str) -> None:
    path = _ws(tmp_path, {"p.yaml": HISTORY_CASE}, 16384) / "p.yaml"
    status, out, err = _cli(["clamp", "--diff", "--policy", policy, str(path)])
    assert (status, out) == (1, "")  # no diff: no plan below a floor (was 12000 -> 1193, 8000 -> 1)
    assert "[BL052]" in err and "history 15000 is 92% of the 16384 window" in err
    status, _out, _err = _cli(["clamp", "--write", "--policy", policy, str(path)])
    assert status == 1 and path.read_text("utf-8") == HISTORY_CASE


# --------------------------------------------- reasons that agree with the numbers
def _two_steps(b_output: int, extra: str = "") -> str:
    return (f"settings:\n  max_context_tokens: 6000\n{extra}steps:\n"
            "  - {id: a, type: call_model, prompt_key: sys, max_output_tokens: 1000}\n"
            f"  - {{id: b, type: call_model, prompt_key: sys, max_output_tokens: {b_output}}}\n")


def _changes(path: Path) -> list[tuple[str, int | None, int, str]]:
    plan = clamp_plan(check(path, policy="auto_clamp"), files=DiskFiles())
    return [(c.key, c.before, c.after, c.reason) for c in plan.changes]


def test_context_lowered_above_its_floor_names_the_step_that_needs_it(tmp_path: Path) -> None:
    path = _ws(tmp_path, {"p.yaml": _two_steps(3000)}, 8192) / "p.yaml"
    # b at context 6000: t + 6000 + 3000 + 128 = 9128 + t > 8192; the context b allows with
    # its output: 8192 - t - 128 - 3000 = 5064 - t, above the floor 6000 // 2 = 3000
    assert _changes(path) == [(
        "settings.max_context_tokens", 6000, 5064 - t(),
        "lowered so that step 'b' fits the window of 8192 tokens; above its floor"
        " min_context_tokens=3000")]


def test_context_stops_at_its_floor_and_only_the_needy_steps_output_goes_down(
        tmp_path: Path) -> None:
    path = _ws(tmp_path, {"p.yaml": _two_steps(6000)}, 8192) / "p.yaml"
    # b allows a context of 8192 - t - 128 - 6000 = 2064 - t, below the floor 3000: the
    # context stops at 3000 and b's output goes to 8192 - t - 128 - 3000 = 5064 - t, above its
    # floor 6000 // 2 = 3000. a (t + 3000 + 1000 + 128) fits: its output stays 1000.
    (ctx, out) = _changes(path)
    assert ctx[:3] == ("settings.max_context_tokens", 6000, 3000)
    assert "step 'b'" in ctx[3] and "min_context_tokens=3000" in ctx[3]
    assert out[:3] == ("steps[1].max_output_tokens", 6000, 5064 - t())
    assert "min_context_tokens=3000" in out[3] and "min_output_tokens is 3000" in out[3]
    report = check(path, policy="auto_clamp")
    for file, text in apply_plan(clamp_plan(report, files=DiskFiles()), DiskFiles()).items():
        Path(file).write_text(text, "utf-8")
    after = check(path, policy="auto_clamp")
    assert [(s.step, s.context.value, s.output.value, s.fits) for s in after.steps] == [
        ("a", 3000, 1000, True), ("b", 3000, 5064 - t(), True)]


def test_an_output_floor_that_leaves_no_room_is_an_error_naming_it(tmp_path: Path) -> None:
    text = _two_steps(6000, "  min_output_tokens: 5500\n")
    path = _ws(tmp_path, {"p.yaml": text}, 8192) / "p.yaml"
    report = check(path, policy="auto_clamp")
    # b at its floors: t + 0 + 3000 + 5500 + 128 = 8628 + t > 8192; 5500 / 8192 = 0.671: 67%
    diag = only(report, "BL052")
    assert diag.step == "b" and f"= {8628 + t()} > 8192" in diag.message
    assert "output floor 5500 (min_output_tokens) is 67% of the 8192 window: lower" \
           " min_output_tokens" in diag.message
    assert report.clamp.empty  # a fits at 6000: nothing is lowered for it


def test_a_default_context_floor_that_leaves_no_room_names_max_context_tokens(
        tmp_path: Path) -> None:
    text = ("settings:\n  max_context_tokens: 7000\nsteps:\n"
            "  - {id: a, type: call_model, prompt_key: sys, max_output_tokens: 1000}\n")
    path = _ws(tmp_path, {"p.yaml": text}, 4000) / "p.yaml"
    # floors: 7000 // 2 = 3500 and 1000 // 2 = 500: t + 3500 + 500 + 128 = 4128 + t > 4000;
    # the largest term is the context floor: 3500 / 4000 = 0.875, rounded 88%
    for policy in ("fail_fast", "auto_clamp"):
        diag = only(check(path, policy=policy), "BL052")
        assert diag.severity is Severity.ERROR
        assert f"= {4128 + t()} > 4000 (over by {128 + t()})" in diag.message
        assert diag.message.endswith(
            "context floor 3500 (half of max_context_tokens 7000) is 88% of the 4000 window:"
            " lower max_context_tokens or set a lower min_context_tokens")


def test_floors_from_config_json_and_the_settings_override(tmp_path: Path) -> None:
    folder = _ws(tmp_path / "c", {"p.yaml": _two_steps(6000)}, 8192, min_context_tokens=4000)
    # floor 4000 (config.json): context 6000 -> 4000, b 6000 -> 8192 - t - 128 - 4000
    assert [c[:3] for c in _changes(folder / "p.yaml")] == [
        ("settings.max_context_tokens", 6000, 4000),
        ("steps[1].max_output_tokens", 6000, 4064 - t())]
    folder = _ws(tmp_path / "s", {"p.yaml": _two_steps(6000, "  min_context_tokens: 2500\n")},
                 8192, min_context_tokens=4000)
    # the pipeline's 2500 wins: context 6000 -> 2500 (b allows 2064 - t, below it),
    # b 6000 -> 8192 - t - 128 - 2500 = 5564 - t
    assert [c[:3] for c in _changes(folder / "p.yaml")] == [
        ("settings.max_context_tokens", 6000, 2500),
        ("steps[1].max_output_tokens", 6000, 5564 - t())]
    folder = _ws(tmp_path / "o", {"p.yaml": _two_steps(6000)}, 8192, min_output_tokens=5200)
    # b at its floors: t + 3000 + 5200 + 128 = 8328 + t > 8192; 5200 / 8192 = 0.635: 63%
    diag = only(check(folder / "p.yaml", policy="auto_clamp"), "BL052")
    assert "output floor 5200 (config.json min_output_tokens) is 63% of the 8192 window:" \
           " lower min_output_tokens in config.json" in diag.message


def test_the_output_floor_is_half_of_the_limit_after_the_models_ceiling(tmp_path: Path) -> None:
    folder = _ws(tmp_path, {"p.yaml": _two_steps(6000, "  min_context_tokens: 5200\n")}, 8192,
                 model_max_output_tokens=4000)
    # b: 6000 -> the ceiling 4000, whose half 2000 is b's floor; the context b allows then is
    # 8192 - t - 128 - 4000 = 4064 - t, below the floor 5200: the context stops at 5200 and b
    # gets 8192 - t - 128 - 5200 = 2864 - t: above 2000 (half of the asked 6000, 3000, would
    # refuse it)
    assert 2000 <= 2864 - t() < 3000
    assert [c[:3] for c in _changes(folder / "p.yaml")] == [
        ("settings.max_context_tokens", 6000, 5200),
        ("steps[1].max_output_tokens", 6000, 2864 - t())]


# ------------------------------------- several pipelines: order- and name-independent
BASE = """\
settings:
  max_context_tokens: 7000
steps:
  - {id: s, type: call_model, prompt_key: sys, max_output_tokens: 500}
"""
SMALL = "extends: base.yaml\nsteps:\n" \
        "  - {id: big, type: call_model, prompt_key: sys, max_output_tokens: 3000}\n"
LARGE = "extends: base.yaml\nsteps:\n" \
        "  - {id: bigger, type: call_model, prompt_key: sys, max_output_tokens: 6000}\n"


def _plan_texts(folder: Path, argv: list[str]) -> dict[str, str]:
    args = build_parser().parse_args(["clamp", "--policy", "auto_clamp", *argv])
    _plans, _after, _originals, edited = plan_all(args)
    return {p.name: edited.get(str(p), p.read_text("utf-8"))
            for p in sorted(folder.glob("*.yaml"))}


def test_edit_parent_floors_come_from_the_original_files(tmp_path: Path) -> None:
    # both children inherit the parent's max_context_tokens 7000: floor 3500 for both.
    # SMALL's step allows 8192 - t - 128 - 3000 = 5064 - t; LARGE's allows 2064 - t, below
    # the floor: the parent's context goes to 3500 and 'bigger' to 8192 - t - 128 - 3500 =
    # 4564 - t (its floor 3000). Planned one over the other, the second child used to take
    # its floor from the lowered parent (half of 5064 - t) and end below 3500.
    folder = _ws(tmp_path / "one", {"base.yaml": BASE, "a.yaml": SMALL, "b.yaml": LARGE}, 8192)
    expected = {"a.yaml": SMALL, "b.yaml": LARGE.replace("6000", str(4564 - t())),
                "base.yaml": BASE.replace("7000", "3500")}
    a, b = str(folder / "a.yaml"), str(folder / "b.yaml")
    assert _plan_texts(folder, ["--edit-parent", a, b]) == expected
    assert _plan_texts(folder, ["--edit-parent", b, a]) == expected
    # the same pipelines under swapped names, found in the folder in the other order
    swapped = _ws(tmp_path / "two", {"base.yaml": BASE, "a.yaml": LARGE, "b.yaml": SMALL},
                  8192)
    assert _plan_texts(swapped, ["--edit-parent", str(swapped)]) == {
        "a.yaml": expected["b.yaml"], "b.yaml": expected["a.yaml"],
        "base.yaml": expected["base.yaml"]}


def test_an_override_a_child_writes_keeps_its_own_childrens_floors(tmp_path: Path) -> None:
    mid = "extends: base.yaml\nsteps:\n" \
          "  - {id: big, type: call_model, prompt_key: sys, max_output_tokens: 4000}\n"
    leaf = "extends: mid.yaml\nsettings:\n  min_context_tokens: 5000\n"
    folder = _ws(tmp_path, {"base.yaml": BASE, "mid.yaml": mid, "leaf.yaml": leaf}, 8192)
    # base fits (t + 7000 + 500 + 128). mid and leaf inherit the context 7000 and run 'big':
    # alone, mid would override it with 8192 - t - 128 - 4000 = 4064 - t (its floor 3500),
    # which leaf would inherit below its own floor 5000. The override mid writes is used by
    # leaf, so it gets leaf's floor: 5000, and 'big' in mid 8192 - t - 128 - 5000 = 3064 - t
    # (floor 2000); leaf then fits as it is.
    texts = _plan_texts(folder, [str(folder)])
    assert texts == {
        "base.yaml": BASE, "leaf.yaml": leaf,
        "mid.yaml": "extends: base.yaml\nsettings:\n  max_context_tokens: 5000\nsteps:\n"
                    "  - {id: big, type: call_model, prompt_key: sys, max_output_tokens:"
                    f" {3064 - t()}}}\n"}


# ------------------------------------------------------------------ property test
NAMES = ("alpha.yaml", "mid.yaml", "zeta.yaml")  # "base.yaml" sorts among them
GRAND = "grand.yaml"  # extends the first child, whatever that child's name


@dataclass
class Generated:
    config: dict[str, int]
    base: str
    children: list[str]  # each starts with "extends: base.yaml"
    grandchild: str | None  # its text after the extends line
    edit_parent: bool
    perm: list[int]  # child k is NAMES[perm[k]] in the second workspace
    order: list[int]  # the order of the paths in the second run: base, children, grandchild


def _yaml_block(settings_: dict[str, int], steps: list[dict[str, Any]] | None,
                extends: str | None) -> str:
    lines = [f"extends: {extends}"] if extends else []
    if settings_:
        lines += ["settings:"] + [f"  {k}: {v}" for k, v in settings_.items()]
    if steps is not None:
        lines.append("steps:")
        for step in steps:
            lines += [f"  - id: {step['id']}", "    type: call_model", "    prompt_key: sys"]
            lines += [f"    {k}: {str(v).lower()}" for k, v in step.items()
                      if k in ("use_history", "max_output_tokens", "max_tokens")]
    return "\n".join(lines) + "\n"


@st.composite
def generated(draw: Any) -> Generated:
    window = draw(st.integers(2000, 20000))

    def maybe(strategy: Any) -> Any:
        return draw(st.one_of(st.none(), strategy))

    config = {"model_context_window": window,
              "model_max_tokens": draw(st.integers(1, window // 2)),
              "format_overhead_tokens": draw(st.integers(0, 64))}
    for key, value in (("model_max_output_tokens", maybe(st.integers(window // 8, window))),
                       ("min_context_tokens", maybe(st.integers(0, window // 2))),
                       ("min_output_tokens", maybe(st.integers(0, window // 2)))):
        if value is not None:
            config[key] = value

    def steps(prefix: str) -> list[dict[str, Any]] | None:
        if prefix != "b" and draw(st.booleans()):
            return None  # inherits its parent's steps
        out = []
        for n in range(draw(st.integers(1, 3))):
            step: dict[str, Any] = {"id": f"{prefix}{n}", "use_history": draw(st.booleans())}
            key = draw(st.sampled_from(["max_output_tokens", "max_tokens", None]))
            if key is not None:
                step[key] = draw(st.integers(1, window // 2))
            out.append(step)
        return out

    def settings_(keys: dict[str, Any]) -> dict[str, int]:
        return {k: v for k, v in ((k, maybe(s)) for k, s in keys.items()) if v is not None}

    def child_settings() -> dict[str, int]:
        return settings_({"max_context_tokens": st.integers(window // 4, window),
                          "min_context_tokens": st.integers(0, window // 2),
                          "min_output_tokens": st.integers(0, window // 2)})

    base_settings = {"max_context_tokens": draw(st.integers(window // 4, window)),
                     **settings_({"max_history_tokens": st.integers(1, window // 4),
                                  "budget_safety_margin_tokens": st.integers(0, 300),
                                  "min_context_tokens": st.integers(0, window // 2),
                                  "min_output_tokens": st.integers(0, window // 2)})}
    base = _yaml_block(base_settings, steps("b"), None)
    count = draw(st.integers(1, len(NAMES)))
    children = [_yaml_block(child_settings(), steps(f"c{k}"), "base.yaml")
                for k in range(count)]
    grandchild = _yaml_block(child_settings(), steps("g"), None) if draw(st.booleans()) \
        else None
    paths = count + 1 + (grandchild is not None)
    return Generated(config, base, children, grandchild, draw(st.booleans()),
                     draw(st.permutations(range(count))), draw(st.permutations(range(paths))))


def _floor(value: int, explicit: int | None) -> int:
    """The documented rule, written out: the explicit floor, else half of the value; never
    above the value, never below 1."""
    wanted = value // 2 if explicit is None else explicit
    return min(value, max(1, wanted))


def _resolved(texts: dict[str, str], name: str, config: dict[str, int]
              ) -> tuple[int, list[int], dict[str, Any]]:
    """max_context_tokens, each call_model step's output limit, and the merged settings of
    a pipeline, read with plain PyYAML along its extends chain."""
    chain = [yaml.safe_load(texts[name])]
    while chain[-1].get("extends"):
        chain.append(yaml.safe_load(texts[chain[-1]["extends"]]))
    merged: dict[str, Any] = {}
    for d in reversed(chain):
        merged.update(d.get("settings") or {})
    steps = next(d["steps"] for d in chain if d.get("steps") is not None)
    outputs = [s.get("max_output_tokens", s.get("max_tokens", config["model_max_tokens"]))
               for s in steps]
    return merged["max_context_tokens"], outputs, merged


def _files(g: Generated, names: list[str]) -> dict[str, str]:
    files = {"base.yaml": g.base, **dict(zip(names, g.children, strict=True))}
    if g.grandchild is not None:
        files[GRAND] = f"extends: {names[0]}\n{g.grandchild}"
    return files


def _run(root: Path, g: Generated, names: list[str], order: list[int]) -> dict[str, str]:
    files = _files(g, names)
    folder = _ws(root, files, g.config["model_context_window"],
                 **{k: v for k, v in g.config.items() if k != "model_context_window"})
    paths = [str(folder / list(files)[i]) for i in order]
    args = build_parser().parse_args(["clamp", "--policy", "auto_clamp", *paths,
                                      *(["--edit-parent"] if g.edit_parent else [])])
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        _plans, _after, _originals, edited = plan_all(args)
    return {name: edited.get(str(folder / name), text) for name, text in files.items()}


@settings(max_examples=int(os.environ.get("BUDGETLENS_PROPERTY_EXAMPLES", "60")),
          deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(generated())
def test_no_planned_value_is_below_its_floor_whatever_the_order_and_names(g: Generated) -> None:
    root = Path(tempfile.mkdtemp(prefix="floors-"))
    first_names = list(NAMES[:len(g.children)])
    second_names = [NAMES[g.perm[k]] for k in range(len(g.children))]
    try:
        first = _run(root / "one", g, first_names, list(range(len(g.order))))
        second = _run(root / "two", g, second_names, g.order)
    finally:
        shutil.rmtree(root)
    original = _files(g, first_names)
    changed = [n for n in first if first[n] != original[n]]
    kinds = (["base"] if "base.yaml" in changed else []) + \
        (["children"] if len(changed) > ("base.yaml" in changed) else [])
    event(f"edited: {' + '.join(kinds) or 'nothing'}{' (edit parent)' if g.edit_parent else ''}")
    event(f"grandchild: {g.grandchild is not None}")
    # the same files (base, each child whatever its name, the grandchild) get the same text
    assert second["base.yaml"] == first["base.yaml"]
    for k in range(len(g.children)):
        assert second[second_names[k]] == first[first_names[k]]
    if g.grandchild is not None:
        assert second[GRAND].replace(f"extends: {second_names[0]}", "extends: c0", 1) == \
            first[GRAND].replace(f"extends: {first_names[0]}", "extends: c0", 1)
    # no value below its floor, taken from the original files; no value raised
    ceiling = g.config.get("model_max_output_tokens")
    for name in original:
        context, outputs, merged = _resolved(original, name, g.config)
        new_context, new_outputs, _ = _resolved(first, name, g.config)
        floor = _floor(context, merged.get("min_context_tokens",
                                           g.config.get("min_context_tokens")))
        assert floor <= new_context <= context, (name, context, floor, new_context)
        explicit = merged.get("min_output_tokens", g.config.get("min_output_tokens"))
        for limit, new in zip(outputs, new_outputs, strict=True):
            capped = min(limit, ceiling) if ceiling is not None else limit
            assert _floor(capped, explicit) <= new <= limit, (name, limit, capped, new)
