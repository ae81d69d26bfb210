"""Parse time of the positioned YAML reader on a generated pipeline (issue 12, YAML row).

Usage: python bench/bench_yaml.py [--steps 500] [--rounds 15] [--json out.json]

The pipeline has the shape of bench/bench_lsp.py's 500-step file (``make_big``): a few
settings and N steps of seven keys each. Each round times, in turn:

- ``new``: ``budgetlens.yamldoc.parse.parse_yaml`` (libyaml's events composed in Python);
- ``old``: the reader before it (``yaml.compose`` with ``CSafeLoader``, then the node graph
  converted; frozen in tests/core/yamldoc/reference_reader.py);
- ``new, pure Python``: the same reader over PyYAML's pure-Python parser (the fallback when
  PyYAML has no libyaml);
- ``yaml.load(CSafeLoader)``: plain values, no positions (the floor of any libyaml reader);
- ``libyaml events``: only reading libyaml's events (what any reader over them pays);
- ``yaml.safe_load``: PyYAML's default, pure Python;
- ``new, merge keys`` and ``old, merge keys``: the same pipeline with an anchored mapping
  in its settings merged (``<<: *defaults``) into every tenth step, which the one-pass reader
  hands to the general one (light node graph, then converted). Anchored scalars and their
  aliases (``&ctx 3000`` ... ``*ctx``) stay on the one-pass reader.

Figures are the median and the best of the rounds, in milliseconds, and each one's ratio to
``new``. Wall-clock figures on a shared machine move; the ratios of one run are what to read.
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.core.yamldoc.reference_reader import parse_yaml_reference  # noqa: E402
from workspaces import step_yaml  # noqa: E402  (bench/, the script's folder)

from budgetlens.yamldoc import parse as yaml_parse  # noqa: E402


def pipeline(steps: int, merged: bool = False) -> str:
    body = "".join(step_yaml(i, "huge" if i % 50 == 0 else f"p{i % 20:02d}", i % 3 == 0)
                   for i in range(steps))
    defaults = ""
    if merged:
        body = re.sub(r"    type: call_model\n", _merge_every_tenth(), body)
        defaults = "  defaults: &defaults {retries: 2, temperature: 0.2}\n"
    return (f"extends: base4.yaml\nsettings:\n  max_context_tokens: 3000\n{defaults}"
            f"steps:\n{body}")


def _merge_every_tenth() -> Callable[[re.Match[str]], str]:
    count = iter(range(10**9))

    def replace(match: re.Match[str]) -> str:
        extra = "    <<: *defaults\n" if next(count) % 10 == 0 else ""
        return match.group(0) + extra
    return replace


def events(text: str) -> int:
    loader = yaml.CSafeLoader(text)
    n = 0
    try:
        while loader.get_event() is not None:
            n += 1
    finally:
        loader.dispose()
    return n


def pure_python(text: str) -> Any:
    saved = yaml_parse._LOADER
    yaml_parse._LOADER = yaml.SafeLoader
    try:
        return yaml_parse.parse_yaml(text)
    finally:
        yaml_parse._LOADER = saved


def measures(text: str, merged: str) -> dict[str, Callable[[], Any]]:
    return {
        "new": lambda: yaml_parse.parse_yaml(text),
        "old": lambda: parse_yaml_reference(text, yaml.CSafeLoader),
        "new, pure Python": lambda: pure_python(text),
        "yaml.load(CSafeLoader)": lambda: yaml.load(text, Loader=yaml.CSafeLoader),
        "libyaml events": lambda: events(text),
        "yaml.safe_load": lambda: yaml.safe_load(text),
        "new, merge keys": lambda: yaml_parse.parse_yaml(merged),
        "old, merge keys": lambda: parse_yaml_reference(merged, yaml.CSafeLoader),
    }


def run(steps: int, rounds: int) -> dict[str, Any]:
    text, merged = pipeline(steps), pipeline(steps, merged=True)
    for doc_text in (text, merged):
        new_doc, _ = yaml_parse.parse_yaml(doc_text)
        old_doc, _ = parse_yaml_reference(doc_text, yaml.CSafeLoader)
        if new_doc is None or old_doc is None or new_doc.value != old_doc.value \
                or dict(new_doc.spans) != dict(old_doc.spans) \
                or new_doc.value != yaml.safe_load(doc_text):
            sys.exit("the readers disagree on the generated pipeline")
    times: dict[str, list[float]] = {name: [] for name in measures(text, merged)}
    for _ in range(rounds):
        for name, fn in measures(text, merged).items():
            started = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - started) * 1000)
    return {"steps": steps, "chars": len(text), "rounds": rounds,
            "ms": {name: {"median": statistics.median(v), "best": min(v)}
                   for name, v in times.items()}}


def print_report(out: dict[str, Any]) -> None:
    ms = out["ms"]
    new_median, new_best = ms["new"]["median"], ms["new"]["best"]
    print(f"pipeline: {out['steps']} steps, {out['chars']} characters;"
          f" {out['rounds']} rounds (median / best, ms; ratio to new)")
    for name, v in ms.items():
        print(f"  {name + ':':<26}{v['median']:8.1f} / {v['best']:6.1f}"
              f"   x{v['median'] / new_median:5.2f} / x{v['best'] / new_best:5.2f}")
    for new, old in (("new", "old"), ("new, merge keys", "old, merge keys")):
        print(f"  {new} is {ms[old]['median'] / ms[new]['median']:.2f}x faster than {old}"
              f" (median), {ms[old]['best'] / ms[new]['best']:.2f}x (best)")


def main() -> None:
    if not getattr(yaml, "__with_libyaml__", False):
        sys.exit("bench_yaml compares with libyaml: this PyYAML was built without it")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--json", type=Path, help="also write the figures as JSON here")
    args = parser.parse_args()
    out = run(args.steps, args.rounds)
    print_report(out)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
