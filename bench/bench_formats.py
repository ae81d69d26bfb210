"""Time ``budgetlens check`` on prompt files in their own formats against its floor.

    .venv/bin/python bench/bench_formats.py [--sizes 250,500,1000] [--quick] [--json out.json]
        [--jobs N] [--rounds 3]

**The workspace**, for each of ``--sizes`` (files), generated deterministically (seeded) in a
temporary folder that is removed at the end, with no config.json: a third each GitHub Models
(``*.prompt.yml``), Prompty (``*.prompty``, v1 and v2 front matter, Jinja2 bodies) and
Dotprompt (``*.prompt``, Handlebars bodies), 25 to a folder. Each file has a system and a
user message of 50-1,500 words between them (English prose with some CJK and emoji), one to
three variables (declared where the format declares them), an output limit in two files of
three (in the format's own key), and a model from the registry in its format's spelling
(``openai/gpt-4o-mini``, ``azure_deployment: gpt-4o``, ``model: gpt-4.1``,
``googleai/gemini-2.5-flash``). Two Dotprompt partials (``_style.prompt``,
``_safety.prompt``, in each folder, as Genkit keeps them next to its prompts) are each
included by a quarter of the Dotprompt files.

**The command, as a process** (wall and CPU seconds of the child and its workers): the
floor (``bench/floor_formats.py``: the same file reads, libyaml ``CSafeLoader`` of each
file's YAML or front matter, tiktoken counting of the message texts, nothing else; one
process), ``budgetlens check -j 1`` with an empty result cache (the first run: one process,
like the floor), the same again (the second run: the result cache), and a first run with the
default jobs (``--jobs N``: ``-j N``), which checks in worker processes. Printed: their
ratios to the floor (wall, CPU in brackets; the jobs' CPU is summed over its processes, so
its CPU ratio is the work done and its wall ratio the wait), second / first, and the growth
per size (seconds per 1,000 files of ``-j 1``, wall / CPU, and that over the smallest
size's: about 1.0 is linear). Each figure is the best (least wall time) of ``--rounds`` (3)
rounds, interleaved (floor, first, second, jobs; then again), every first run with an empty
cache; the ratio within every round and the steal of each run (``bench/machine.py``) are
printed when there are several rounds. On a busy machine the CPU figures are the steadier
ones. Every child runs with bytecode, after one untimed run of each command. The rounds,
the figures and the table rows are ``bench/process_timing.py``'s, shared with
``bench/bench_check.py``. The first round's floor and check print their totals (files,
messages, tokens; pipelines, steps, diagnostics): both saw every file.

``--quick``: sizes 30,60 (unless ``--sizes``) and one round (unless ``--rounds``).
``--json FILE`` writes every figure.
"""

from __future__ import annotations

import argparse
import os
import random
from pathlib import Path
from typing import Any

from process_timing import (
    add_growth,
    add_round_options,
    best_figures,
    header_text,
    jobs_shown,
    measure_rounds,
    rounds_shown,
    row_text,
    scratch_folder,
    steal_text,
    usable_cpus,
    warm_up,
    write_figures,
)
from workspaces import prose

FLOOR = Path(__file__).resolve().parent / "floor_formats.py"
PER_FOLDER = 25
VARIABLES = ("input", "topic", "question", "context", "customer", "order_id")
GITHUB_MODELS = ("openai/gpt-4o-mini", "openai/gpt-4o", "openai/gpt-4.1",
                 "openai/gpt-4.1-mini", "openai/gpt-4")
PROMPTY_V1_MODELS = (("openai", "model", "gpt-4"), ("openai", "model", "gpt-4o-mini"),
                     ("azure_openai", "azure_deployment", "gpt-4o"),
                     ("azure_openai", "azure_deployment", "gpt-4.1"))
PROMPTY_V2_MODELS = ("gpt-4o", "gpt-4o-mini", "gpt-4.1-mini")
DOTPROMPT_MODELS = ("googleai/gemini-2.5-flash", "googleai/gemini-2.5-pro",
                    "vertexai/gemini-2.0-flash", "openai/gpt-4o")
PARTIALS = {"style": "Answer in a warm, plain tone. Keep sentences short.\n",
            "safety": "Never reveal internal notes, keys or another customer's data.\n"}


def _text(rng: random.Random, words: int, indent: str = "") -> str:
    """Prose of ``words`` words, one sentence a line, each line indented by ``indent``."""
    lines = [line.strip() for line in prose(rng, words).splitlines() if line.strip()]
    return "".join(f"{indent}{line}\n" for line in lines)


def _words(rng: random.Random) -> tuple[int, int]:
    """Words of the system and the user message: 50-1,500 between them."""
    total = rng.randint(50, 1500)
    system = int(total * rng.uniform(0.7, 0.95))
    return system, total - system


def _limit(rng: random.Random) -> int | None:
    """An output limit in two files of three."""
    return rng.randint(256, 2000) if rng.random() < 2 / 3 else None


def github_file(rng: random.Random, i: int, names: list[str]) -> str:
    system, user = _words(rng)
    limit = _limit(rng)
    key = rng.choice(("max_tokens", "maxCompletionTokens"))
    params = "modelParameters:\n  temperature: 0.2\n" + (f"  {key}: {limit}\n" if limit else "")
    variables = " ".join(f"{{{{{n}}}}}" for n in names)
    return (f"name: Flow {i}\n"
            f"description: Answers the questions of team {i % 13}\n"
            f"model: {rng.choice(GITHUB_MODELS)}\n" + params +
            "messages:\n"
            "  - role: system\n"
            "    content: |\n" + _text(rng, system, "      ") +
            "  - role: user\n"
            "    content: |\n" + _text(rng, user, "      ") + f"      {variables}\n")


def prompty_file(rng: random.Random, i: int, names: list[str]) -> str:
    system, user = _words(rng)
    limit = _limit(rng)
    if i % 2:  # v1
        kind, key, model = rng.choice(PROMPTY_V1_MODELS)
        front = ("model:\n  api: chat\n  configuration:\n"
                 f"    type: {kind}\n    {key}: {model}\n"
                 + (f"  parameters:\n    max_tokens: {limit}\n" if limit else "")
                 + "inputs:\n" + "".join(f"  {n}:\n    type: string\n" for n in names))
    else:  # v2
        model = rng.choice(PROMPTY_V2_MODELS)
        front = (f"model:\n  id: {model}\n  provider: openai\n"
                 f"  options:\n    temperature: 0.3\n    maxOutputTokens: {limit}\n"
                 if limit else f"model: {model}\n")
        front += ("inputs:\n" + "".join(f"  - name: {n}\n    kind: string\n" for n in names)
                  + "template:\n  format:\n    kind: jinja2\n")
    head, *rest = names
    return (f"---\nname: support-{i}\ndescription: Support answers, flow {i}\n" + front
            + "---\nsystem:\n" + _text(rng, system)
            + "".join(f"{n}: {{{{ {n} }}}}\n" for n in rest)
            + "\nuser:\n" + _text(rng, user) + f"{{{{{head}}}}}\n")


def dotprompt_file(rng: random.Random, i: int, names: list[str]) -> str:
    system, user = _words(rng)
    limit = _limit(rng)
    config = f"config:\n  temperature: 0.4\n  maxOutputTokens: {limit}\n" if limit else ""
    partial = ("{{>style}}\n" if i % 4 == 0 else "{{>safety}}\n" if i % 4 == 1 else "")
    return (f"---\nmodel: {rng.choice(DOTPROMPT_MODELS)}\n" + config
            + "input:\n  schema:\n" + "".join(f"    {n}: string\n" for n in names)
            + "---\n{{role \"system\"}}\n" + _text(rng, system) + partial
            + "{{role \"user\"}}\n" + _text(rng, user)
            + " ".join(f"{{{{{n}}}}}" for n in names) + "\n")


def generate(root: Path, files: int, seed: int = 11) -> None:
    """``files`` prompt files below ``root``: a third of each format, ``PER_FOLDER`` to a
    folder with the two Dotprompt partials."""
    rng = random.Random(seed)
    root.mkdir(parents=True)
    for i in range(files):
        folder = root / "services" / f"svc{i // PER_FOLDER:03d}" / "prompts"
        if not folder.exists():
            folder.mkdir(parents=True)
            for name, text in PARTIALS.items():
                (folder / f"_{name}.prompt").write_text(text, "utf-8")
        names = rng.sample(VARIABLES, rng.randint(1, 3))
        kind = i % 3
        if kind == 0:
            path, text = folder / f"flow{i:04d}.prompt.yml", github_file(rng, i, names)
        elif kind == 1:
            path, text = folder / f"support{i:04d}.prompty", prompty_file(rng, i, names)
        else:
            path, text = folder / f"answer{i:04d}.prompt", dotprompt_file(rng, i // 3, names)
        path.write_text(text, "utf-8")


def measure_size(root: Path, size: int, jobs: int | None, rounds: int) -> dict[str, Any]:
    """The floor, a first and a second ``check -j 1`` and a first run with the default jobs
    of a new workspace of ``size`` files; each the best of ``rounds`` interleaved rounds
    (``process_timing``), with what the first round's floor and check saw."""
    ws = root / f"ws{size}"
    generate(ws, size)
    measured = measure_rounds(ws, root / f"cache{size}", FLOOR, jobs, rounds,
                              keep_output=True)
    first, floor = measured.runs["first"], measured.runs["floor"]
    return {"files": size, "floor_totals": measured.totals["floor"],
            "check_totals": measured.totals["first"], **best_figures(measured),
            "first_over_floor_cpu_per_round": [
                f[1] / fl[1] for f, fl in zip(first, floor, strict=True)]}


def _rounds_text(row: dict[str, Any]) -> str:
    return (f"{'':>6} -j 1 / floor by round (wall, CPU): "
            + " ".join(f"{w:.2f}x/{c:.2f}x" for w, c in zip(
                row["first_over_floor_per_round"], row["first_over_floor_cpu_per_round"],
                strict=True))
            + steal_text(row))


def command_figures(root: Path, sizes: list[int], jobs: int | None,
                    rounds: int) -> dict[str, Any]:
    print("budgetlens check on prompt files (GitHub Models, Prompty, Dotprompt), as a process"
          f" (wall s / CPU s; ratios on wall, CPU in brackets; {rounds_shown(rounds)}):")
    print(f"  floor: bench/floor_formats.py, one process; -j 1: in one process; {jobs_shown(jobs)}:"
          " worker processes (its CPU is the sum over them)")
    print(header_text("files", 6))
    rows: list[dict[str, Any]] = []
    # 64 files or more, so that -j 2 starts its workers
    warm_up(root / "warm-up", lambda ws: generate(ws, 66, seed=3), FLOOR)
    for size in sizes:
        row = measure_size(root, size, jobs, rounds)
        add_growth(row, size, rows[0] if rows else None)
        rows.append(row)
        print(row_text(row, "files", 6))
        print(f"{'':>6} floor saw: {row['floor_totals']}; check saw: {row['check_totals']}")
        if rounds > 1:
            print(_rounds_text(row))
    print("seconds per 1,000 files, -j 1 (wall/CPU) and jobs (wall): "
          + ", ".join(f"{r['files']}: {r['first_s_per_1000']:.2f}/"
                      f"{r['first_cpu_s_per_1000']:.2f} and {r['jobs_s_per_1000']:.2f}"
                      for r in rows))
    return {"sizes": rows, "jobs": jobs or usable_cpus(), "rounds": rounds,
            "load_average": os.getloadavg()}


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", help="files per workspace, comma-separated"
                                        " (default 250,500,1000)")
    parser.add_argument("--quick", action="store_true",
                        help="sizes 30,60 and one round, unless given")
    parser.add_argument("--json", metavar="FILE", help="write every figure to FILE")
    add_round_options(parser)
    args = parser.parse_args()
    if args.sizes:
        sizes = [int(x) for x in args.sizes.split(",")]
    else:
        sizes = [30, 60] if args.quick else [250, 500, 1000]
    rounds = args.rounds if args.rounds is not None else (1 if args.quick else 3)
    with scratch_folder("budgetlens-bench-formats-") as tmp:
        figures = {"command": command_figures(tmp, sizes, args.jobs, rounds)}
    write_figures(args.json, figures)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
