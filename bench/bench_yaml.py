"""Parse time of the positioned YAML reader on a generated pipeline (issue 12, YAML row).

Usage: python bench/bench_yaml.py [--steps 500] [--rounds 15] [--json out.json]

The pipeline has the shape of bench/bench_lsp.py's 500-step file (``make_big``): a few
settings and N steps of seven keys each. Each round times, in turn:

- ``new``: ``budgetlens.yamldoc.parse.parse_yaml`` reading the text in full (libyaml's events
  composed in Python; re-reading from an earlier text, ``yamldoc.incremental``, switched off);
- ``new, one-character edit``: ``parse_yaml`` of the text with one digit of the first step's
  ``max_output_tokens`` changed, right after the text was read in full (what the language
  server does after a keystroke: the earlier reading is re-used, ``yamldoc.incremental``);
- ``new, next keystroke``: then one more character typed, at the end of
  ``max_context_tokens`` near the top (every later offset moves);
- ``old``: the reader before it (``yaml.compose`` with ``CSafeLoader``, then the node graph
  converted; frozen in tests/core/yamldoc/reference_reader.py);
- ``new, pure Python``: the full reading over PyYAML's pure-Python parser (the fallback when
  PyYAML has no libyaml);
- ``yaml.load(CSafeLoader)``: plain values, no positions (the floor of any libyaml reader);
- ``libyaml events``: only reading libyaml's events (what any reader over them pays);
- ``yaml.safe_load``: PyYAML's default, pure Python;
- ``new, merge keys`` and ``old, merge keys``: the same pipeline with an anchored mapping
  in its settings merged (``<<: *defaults``) into every tenth step, which the one-pass reader
  hands to the general one (light node graph, then converted). Anchored scalars and their
  aliases (``&ctx 3000`` ... ``*ctx``) stay on the one-pass reader.

Figures are the median and the best of the rounds, in milliseconds, of the wall clock and
of this process's CPU time, and each one's ratio to ``new``. Wall-clock figures on a shared
machine move; the CPU times and the ratios of one run are what to read.
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

from budgetlens.yamldoc import incremental  # noqa: E402
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


def full(text: str) -> Any:
    """``parse_yaml`` reading ``text`` in full (no earlier reading re-used)."""
    incremental.ENABLED = False
    try:
        return yaml_parse.parse_yaml(text)
    finally:
        incremental.ENABLED = True


def pure_python(text: str) -> Any:
    saved = yaml_parse._LOADER
    yaml_parse._LOADER = yaml.SafeLoader
    try:
        return full(text)
    finally:
        yaml_parse._LOADER = saved


def digit_edit(text: str, i: int) -> str:
    """The last digit of the first step's max_output_tokens changed (never to itself)."""
    at = text.index("max_output_tokens: ") + len("max_output_tokens: ") + 2
    return text[:at] + str((int(text[at]) + 1 + i % 9) % 10) + text[at + 1:]


def typed(text: str, i: int) -> str:
    """One digit typed at the end of max_context_tokens' value (near the top)."""
    at = text.index("max_context_tokens: ") + len("max_context_tokens: 3000")
    return text[:at] + str(i % 10) + text[at:]


def read_after(before: list[str], text: str) -> Callable[[], Any]:
    """Read ``before`` in turn (not timed: the earlier versions), then time ``text``."""
    def prepare() -> None:
        incremental.clear()
        for earlier in before:
            yaml_parse.parse_yaml(earlier)
    timed = lambda: yaml_parse.parse_yaml(text)  # noqa: E731
    timed.prepare = prepare  # type: ignore[attr-defined]
    return timed


def measures(text: str, merged: str, i: int) -> dict[str, Callable[[], Any]]:
    edited = digit_edit(text, i)
    return {
        "new": lambda: full(text),
        "new, one-character edit": read_after([text], edited),
        "new, next keystroke": read_after([text, edited], typed(edited, i)),
        "old": lambda: parse_yaml_reference(text, yaml.CSafeLoader),
        "new, pure Python": lambda: pure_python(text),
        "yaml.load(CSafeLoader)": lambda: yaml.load(text, Loader=yaml.CSafeLoader),
        "libyaml events": lambda: events(text),
        "yaml.safe_load": lambda: yaml.safe_load(text),
        "new, merge keys": lambda: full(merged),
        "old, merge keys": lambda: parse_yaml_reference(merged, yaml.CSafeLoader),
    }


def check(text: str, merged: str) -> None:
    """Every reading compared, before anything is timed."""
    for doc_text in (text, merged):
        new_doc, _ = full(doc_text)
        old_doc, _ = parse_yaml_reference(doc_text, yaml.CSafeLoader)
        if new_doc is None or old_doc is None or new_doc.value != old_doc.value \
                or dict(new_doc.spans) != dict(old_doc.spans) \
                or new_doc.value != yaml.safe_load(doc_text):
            sys.exit("the readers disagree on the generated pipeline")
    edited = digit_edit(text, 0)
    for before, after in (([text], edited), ([text, edited], typed(edited, 0))):
        read_after(before, after).prepare()  # type: ignore[attr-defined]
        answered = incremental.counts["edit"]
        again, _ = yaml_parse.parse_yaml(after)
        fresh, _ = full(after)
        if incremental.counts["edit"] != answered + 1 or again is None or fresh is None \
                or again.value != fresh.value or dict(again.spans) != dict(fresh.spans):
            sys.exit("the edited pipeline was not re-read from the earlier reading, or"
                     " differently from a full reading")


def run(steps: int, rounds: int) -> dict[str, Any]:
    text, merged = pipeline(steps), pipeline(steps, merged=True)
    check(text, merged)
    wall: dict[str, list[float]] = {name: [] for name in measures(text, merged, 0)}
    cpu: dict[str, list[float]] = {name: [] for name in wall}
    for i in range(rounds):
        for name, fn in measures(text, merged, i).items():
            prepare = getattr(fn, "prepare", None)
            if prepare is not None:
                prepare()
            started, started_cpu = time.perf_counter(), time.process_time()
            fn()
            cpu[name].append((time.process_time() - started_cpu) * 1000)
            wall[name].append((time.perf_counter() - started) * 1000)
    return {"steps": steps, "chars": len(text), "rounds": rounds,
            "ms": {name: {"median": statistics.median(v), "best": min(v)}
                   for name, v in wall.items()},
            "cpu_ms": {name: {"median": statistics.median(v), "best": min(v)}
                       for name, v in cpu.items()}}


def print_report(out: dict[str, Any]) -> None:
    print(f"pipeline: {out['steps']} steps, {out['chars']} characters; {out['rounds']} rounds"
          " (median / best, ms; ratio to new), wall clock | CPU time")
    wall, cpu = out["ms"], out["cpu_ms"]
    for name in wall:
        cells = []
        for ms in (wall, cpu):
            v, new = ms[name], ms["new"]
            cells.append(f"{v['median']:8.2f} / {v['best']:6.2f}"
                         f"  x{v['median'] / new['median']:5.2f} / x{v['best'] / new['best']:5.2f}")
        print(f"  {name + ':':<26}{cells[0]}  | {cells[1]}")
    for new, old in (("new", "old"), ("new, merge keys", "old, merge keys")):
        print(f"  {new} is {wall[old]['median'] / wall[new]['median']:.2f}x faster than {old}"
              f" (median), {wall[old]['best'] / wall[new]['best']:.2f}x (best);"
              f" CPU {cpu[old]['median'] / cpu[new]['median']:.2f}x")
    for read in ("new", "new, one-character edit", "new, next keystroke"):
        for floor in ("libyaml events", "yaml.load(CSafeLoader)"):
            print(f"  {read} / {floor}: x{wall[read]['median'] / wall[floor]['median']:.2f}"
                  f" (median), CPU x{cpu[read]['median'] / cpu[floor]['median']:.2f}")


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
