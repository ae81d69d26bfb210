"""LSP benchmark by instructions: what an edit costs a whole server, counted by callgrind.

bench_lsp.py times. On a shared machine its wall-clock rows, and the server's CPU time it
reads from /proc, move by about 10% between runs. This bench counts instead, so two
versions can be compared whatever else the machine does:

1. a server starts under callgrind, opens the scenario's document and finishes its start-up
   (its diagnostics, then the answer to a code lens request, which waits for the analysis);
2. after ``--warm`` edits, the counters are zeroed (``callgrind_control -z``);
3. after ``--edits`` more edits, each waited for in the same way, they are dumped
   (``callgrind_control -d``).

The figure is the instructions per edit of step 3: the analysis, the publish, the lens
answer and the message loop, start-up left out. The same run gives the same count within
a fraction of a percent.

The reference is the bare pygls server (bench/floor_server.py) under the same edits. Another
checkout's server is counted with ``--server LABEL=PYTHON`` (its interpreter, which imports
its own ``budgetlens_lsp``); ratios are to the first server named.

Scenarios: ``example`` (an edit of examples/pipelines/long_report.yaml), ``big`` (an edit
of the 500-step pipeline with a 5-level extends chain) and ``many`` (an edit of the prompt
that 200 of 1,000 pipelines read; the code lens answer waits for all of them), from
bench/workspaces.py as bench_lsp.py makes them.

    python bench/bench_lsp_counted.py
    python bench/bench_lsp_counted.py --server before=../before/.venv/bin/python --scenarios many
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench_lsp import OURS_SETTINGS, number_edit, prompt_edit
from instructions import ENV, dump_total
from lsp_client import LspProcess
from workspaces import make_big, make_many

BENCH = Path(__file__).resolve().parent
EXAMPLES = BENCH.parent / "examples"
#: Seconds one answer of a server under callgrind may take (it runs about 50 times slower).
ANSWER_S = 600.0

Edit = Callable[[str, int], tuple[str, list[dict[str, Any]]]]


def scenario(name: str, work: Path, steps: int) -> tuple[Path, Path, str, Edit]:
    """The workspace, the edited document, its language and the edit of one scenario."""
    if name == "example":
        root = work / "example"
        shutil.copytree(EXAMPLES, root)
        return (root, root / "pipelines" / "long_report.yaml", "yaml",
                number_edit("max_context_tokens"))
    if name == "many":
        root = work / "many"
        shared, _ = make_many(root)
        return root, shared, "plaintext", prompt_edit
    root = work / "big"
    return root, make_big(root, steps), "yaml", number_edit("max_context_tokens")


async def count_edits(command: list[str], root: Path, document: Path, language: str,
                      edit: Edit, warm: int, edits: int, out: Path) -> int:
    """Instructions of ``edits`` edits of ``document`` in the server ``command`` (module
    docstring, steps 1-3)."""
    cg = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}", *command]
    env = {**os.environ, **ENV}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # an installed server has its bytecode
    client = LspProcess(cg, cwd=root, settings=OURS_SETTINGS, stderr_path=out.with_suffix(
        ".log"), env=env)
    try:
        await client.start()
        await client.initialize(root, {}, ANSWER_S)
        text = document.read_text("utf-8")
        uri = client.did_open(document, language, text)
        if not await client.wait_for(lambda: bool(client.published_since(0, uri)), ANSWER_S):
            raise RuntimeError(f"no diagnostics for {document} after didOpen")
        for _ in range(2):  # the start-up's background work answers before the lens
            await lens(client, uri)

        async def one(i: int) -> None:
            nonlocal text
            text, changes = edit(text, i)
            mark = len(client.published)
            client.did_change(uri, i + 2, changes)
            if not await client.wait_for(lambda: any(
                    p.uri == uri and (p.version is None or p.version >= i + 2)
                    for p in client.published_since(mark)), ANSWER_S):
                raise RuntimeError(f"no diagnostics after edit {i + 1}")
            await lens(client, uri)

        for i in range(warm):
            await one(i)
        control(client.pid, "-z")
        for i in range(warm, warm + edits):
            await one(i)
        control(client.pid, "-d", "edits")
    finally:
        await client.close()
    dumps = [d for d in glob.glob(f"{out}.*") if d.rsplit(".", 1)[1].isdigit()]
    if len(dumps) != 1:
        raise RuntimeError(f"expected one dump of the edits, got {dumps}")
    return dump_total(dumps[0])


async def lens(client: LspProcess, uri: str) -> None:
    """A code lens request: budgetlens answers once every pending analysis is done (the
    floor answers with an error at once, which is as good)."""
    with contextlib.suppress(Exception):
        await client.request("textDocument/codeLens", {"textDocument": {"uri": uri}},
                             ANSWER_S)


def control(pid: int, *args: str) -> None:
    proc = subprocess.run(["callgrind_control", *args, str(pid)], capture_output=True,
                          text=True, timeout=ANSWER_S)
    if proc.returncode != 0:
        raise RuntimeError(f"callgrind_control {' '.join(args)} failed: {proc.stderr}")


def servers(named: list[str]) -> dict[str, list[str]]:
    """The servers to count, by label: this interpreter's, each ``--server``, the floor."""
    out = {"budgetlens": [sys.executable, "-m", "budgetlens_lsp", "serve"]}
    for item in named:
        label, _, python = item.partition("=")
        if not label or not python:
            sys.exit(f"--server takes LABEL=PYTHON, not {item!r}")
        out[label] = [python, "-m", "budgetlens_lsp", "serve"]
    out["floor"] = [sys.executable, str(BENCH / "floor_server.py")]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", action="append", default=[], metavar="LABEL=PYTHON",
                        help="also count this interpreter's budgetlens_lsp")
    parser.add_argument("--scenarios", default="example,big,many",
                        help="comma-separated, from: example, big, many (default: all)")
    parser.add_argument("--warm", type=int, default=3, help="edits before counting (3)")
    parser.add_argument("--edits", type=int, default=10, help="edits counted (10)")
    parser.add_argument("--steps", type=int, default=500, help="steps of the big pipeline")
    parser.add_argument("--quick", action="store_true",
                        help="a smoke test: the example only, 1 warm edit, 2 counted")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("valgrind is not installed (Debian: apt-get install valgrind)")
    names = ["example"] if args.quick else args.scenarios.split(",")
    warm, edits = (1, 2) if args.quick else (args.warm, args.edits)
    targets = servers(args.server)
    figures: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-lsp-cg-") as folder:
        for name in names:
            print(f"{name}: {warm} warm edits, then {edits} counted ...", flush=True)
            figures[name] = {}
            for label, command in targets.items():
                work = Path(folder) / f"{name}-{label}"
                root, document, language, edit = scenario(name, work, args.steps)
                total = asyncio.run(count_edits(command, root, document, language, edit,
                                                warm, edits, Path(folder) / f"cg-{name}-{label}"))
                figures[name][label] = total / edits
    report(figures)
    if args.json:
        args.json.write_text(json.dumps({"warm": warm, "edits": edits,
                                         "instructions_per_edit": figures}, indent=2))


def report(figures: dict[str, dict[str, float]]) -> None:
    print("\n== instructions per edit (callgrind), start-up left out ==")
    for name, by_server in figures.items():
        first = next(iter(by_server.values()))
        print(f"  {name}")
        for label, count in by_server.items():
            print(f"    {label:14} {count / 1e6:10.2f} M   {count / first:6.3f}x")


if __name__ == "__main__":
    main()
