"""LSP benchmark: budgetlens serve vs a bare pygls server (the floor) and yaml-language-server.

One run measures, with a real LSP client over stdio (bench/lsp_client.py):

1. server start to first diagnostics (spawn -> initialize -> didOpen -> publishDiagnostics),
   median of --starts runs, for budgetlens, the bare pygls floor (bench/floor_server.py) and
   yaml-language-server;
2. didChange -> publishDiagnostics latency p50/p95, one edit at a time (each edit a new text,
   so no content cache can answer it), on
   a. the example over-budget pipeline (examples/),
   b. a generated 500-step pipeline at the end of a 5-level extends chain,
   c. a generated 1,000-pipeline workspace after editing a prompt used by 200 pipelines
      (latency until every one of the 200 dependents has been re-published);
3. peak RSS (VmHWM) of each server process.

The same edits go to yaml-language-server (npm, --stdio; `npm ci` in bench/ installs it) as
the peer, and the figures are printed with ratios. Every process is ended by its PID.

    .venv/bin/python bench/bench_lsp.py [--edits 60] [--starts 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lsp_client import LspProcess

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
WORK = BENCH / ".work"
EXAMPLES = REPO / "examples"
YAML_LS = BENCH / "node_modules" / "yaml-language-server" / "bin" / "yaml-language-server"

WINDOW = 8192
OUTPUT = 1024
CONTEXT = 3000

# What a server waits on purpose before it diagnoses one edit made after a quiet moment (the
# benchmark's edits are one at a time): yaml-language-server always waits its validationDelayMs
# (200 ms, yamlSettings.js); budgetlens's debounce (debounceMs) only delays edits that follow
# another within debounceMs, so a lone edit is analysed at once. The report shows latencies as
# measured and, next to them, net of that wait.
DELAY_MS = {"budgetlens": 0.0, "yaml-ls": 200.0}

OURS_SETTINGS: dict[str, Any] = {"budgetlens": {}}
YAML_SETTINGS: dict[str, Any] = {
    "yaml": {"validate": True, "hover": True, "completion": True, "format": {"enable": False},
             "schemaStore": {"enable": False}, "schemas": {}},
    "http": {"proxy": "", "proxyStrictSSL": False},
    "editor": {"tabSize": 2, "detectIndentation": False},
    "[yaml]": {},
}


# -- servers ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Server:
    name: str
    command: list[str]
    settings: dict[str, Any]
    init_options: Any = None


def servers() -> dict[str, Server]:
    budgetlens = shutil.which("budgetlens", path=f"{Path(sys.executable).parent}{os.pathsep}"
                                                 f"{os.environ.get('PATH', '')}")
    if budgetlens is None:
        sys.exit("budgetlens is not installed (pip install -e . in the venv)")
    if not YAML_LS.is_file():
        sys.exit(f"yaml-language-server is missing: run `npm ci` in {BENCH}")
    node = shutil.which("node")
    if node is None:
        sys.exit("node is not installed")
    return {
        "budgetlens": Server("budgetlens", [budgetlens, "serve"], OURS_SETTINGS, {}),
        "floor": Server("pygls floor", [sys.executable, str(BENCH / "floor_server.py")], {}),
        "yaml-ls": Server("yaml-language-server", [node, str(YAML_LS), "--stdio"],
                          YAML_SETTINGS),
    }


async def launch(server: Server, root: Path, log: Path) -> LspProcess:
    client = LspProcess(server.command, cwd=root, settings=server.settings, stderr_path=log)
    await client.start()
    await client.initialize(root, server.init_options)
    return client


# -- generated workspaces -----------------------------------------------------------------


def words(n: int, seed: int) -> str:
    vocabulary = ("budget", "context", "window", "tokens", "history", "prompt", "model", "step",
                  "output", "margin", "pipeline", "summary", "answer", "question", "evidence",
                  "retrieve", "rank", "verify", "format", "json")
    return " ".join(vocabulary[(i * 7 + seed) % len(vocabulary)] for i in range(n))


def write_config(root: Path) -> None:
    (root / "prompts").mkdir(parents=True)
    (root / "pipelines").mkdir()
    (root / "config.json").write_text(json.dumps({
        "model_context_window": WINDOW, "model_max_tokens": OUTPUT, "prompts_dir": "prompts",
        "development": True}, indent=2) + "\n")


def step_yaml(index: int, prompt: str, history: bool) -> str:
    return (f"  - id: step_{index:04d}\n"
            f"    type: call_model\n"
            f"    prompt_key: {prompt}\n"
            f"    use_history: {'true' if history else 'false'}\n"
            f"    user_parts:\n"
            f"      template: \"Question {{question}} with {{context}} ({index})\"\n"
            f"    max_output_tokens: {512 + index % 256}\n")


def make_big(root: Path) -> Path:
    """A 500-step pipeline at the end of a 5-level extends chain; every 50th step is over."""
    write_config(root)
    for i in range(20):
        (root / "prompts" / f"p{i:02d}.txt").write_text(words(40 + 15 * i, i) + "\n")
    (root / "prompts" / "huge.txt").write_text(words(4200, 99) + "\n")
    (root / "pipelines" / "base0.yaml").write_text(
        "settings:\n  max_context_tokens: 2500\n  max_history_tokens: 400\n"
        "  budget_safety_margin_tokens: 100\n")
    for level in range(1, 5):
        (root / "pipelines" / f"base{level}.yaml").write_text(
            f"extends: base{level - 1}.yaml\nsettings:\n"
            f"  max_history_tokens: {400 + 50 * level}\n")
    steps = "".join(step_yaml(i, "huge" if i % 50 == 0 else f"p{i % 20:02d}", i % 3 == 0)
                    for i in range(500))
    big = root / "pipelines" / "big.yaml"
    big.write_text(f"extends: base4.yaml\nsettings:\n  max_context_tokens: {CONTEXT}\n"
                   f"steps:\n{steps}")
    return big


def make_many(root: Path) -> tuple[Path, list[Path]]:
    """1,000 pipelines (4 steps each); 200 of them use prompts/shared.txt."""
    write_config(root)
    for i in range(50):
        (root / "prompts" / f"other{i:02d}.txt").write_text(words(30 + 9 * i, i) + "\n")
    shared = root / "prompts" / "shared.txt"
    shared.write_text("revision 0000\n" + words(300, 3) + "\n")
    (root / "pipelines" / "base.yaml").write_text(
        f"settings:\n  max_context_tokens: {CONTEXT}\n  max_history_tokens: 500\n"
        "  budget_safety_margin_tokens: 128\n")
    dependents = []
    for p in range(1000):
        uses_shared = p < 200
        steps = "".join(step_yaml(s, "shared" if uses_shared and s == 1
                                  else f"other{(p + s) % 50:02d}", s == 2) for s in range(4))
        path = root / "pipelines" / f"p{p:04d}.yaml"
        path.write_text(f"extends: base.yaml\nsteps:\n{steps}")
        if uses_shared:
            dependents.append(path)
    return shared, dependents


def example_pipeline(root: Path) -> Path:
    """The example pipeline that is over budget (examples/pipelines/long_report.yaml)."""
    path = root / "pipelines" / "long_report.yaml"
    if not path.is_file() or not re.search(r"max_context_tokens:\s*\d+", path.read_text()):
        sys.exit(f"the over-budget example {path} is missing or has no max_context_tokens")
    return path


# -- edits ----------------------------------------------------------------------------------


def position(text: str, offset: int) -> dict[str, int]:
    line = text.count("\n", 0, offset)
    start = text.rfind("\n", 0, offset) + 1
    return {"line": line, "character": len(text[start:offset].encode("utf-16-le")) // 2}


def number_edit(key: str) -> Callable[[str, int], tuple[str, list[dict[str, Any]]]]:
    """Edit i sets the first `key: N` to a new value each time (N - 1 - i)."""
    pattern = re.compile(rf"{key}:\s*(\d+)")
    originals: dict[int, int] = {}

    def edit(text: str, i: int) -> tuple[str, list[dict[str, Any]]]:
        match = pattern.search(text)
        assert match, f"{key} not found"
        if i == 0:
            originals[0] = int(match.group(1))
        value = str(max(1, originals[0] - 1 - i))
        start, end = match.span(1)
        change = {"range": {"start": position(text, start), "end": position(text, end)},
                  "text": value}
        return text[:start] + value + text[end:], [change]

    return edit


def prompt_edit(text: str, i: int) -> tuple[str, list[dict[str, Any]]]:
    """Edit i writes a new revision number; even edits append ~6,000 tokens (steps go over),
    odd edits remove them again."""
    changes = []
    start = text.index("revision ") + len("revision ")
    new = f"{i + 1:04d}"
    changes.append({"range": {"start": position(text, start),
                              "end": position(text, start + 4)}, "text": new})
    text = text[:start] + new + text[start + 4:]
    marker = "\n<<filler>>"
    if marker in text:
        cut = text.index(marker)
        changes.append({"range": {"start": position(text, cut),
                                  "end": position(text, len(text))}, "text": ""})
        text = text[:cut]
    else:
        filler = marker + " " + words(6000, i) + "\n"
        end = position(text, len(text))
        changes.append({"range": {"start": end, "end": end}, "text": filler})
        text += filler
    return text, changes


# -- measurements ---------------------------------------------------------------------------


@dataclass
class Latencies:
    values_ms: list[float] = field(default_factory=list)
    missing: int = 0
    note: str = ""

    def quantile(self, q: float) -> float | None:
        if not self.values_ms:
            return None
        ordered = sorted(self.values_ms)
        index = min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))
        return ordered[index]


async def measure_start(server: Server, root: Path, document: Path, language: str,
                        runs: int, log: Path) -> tuple[list[float], list[int]]:
    """Spawn -> first publishDiagnostics for `document`, `runs` times (seconds), peak RSS."""
    times: list[float] = []
    rss: list[int] = []
    for _ in range(runs):
        client = LspProcess(server.command, cwd=root, settings=server.settings,
                            stderr_path=log)
        try:
            await client.start()
            await client.initialize(root, server.init_options)
            uri = client.did_open(document, language, document.read_text())
            if await client.wait_for(lambda c=client, u=uri: bool(c.published_since(0, u)),
                                     60):
                times.append(client.published_since(0, uri)[0].at - client.started_at)
            rss.append(client.peak_rss_kib() or 0)
        finally:
            await client.close()
    return times, rss


async def measure_edits(client: LspProcess, document: Path, language: str, edits: int,
                        edit: Callable[[str, int], tuple[str, list[dict[str, Any]]]],
                        wait_uris: list[str] | None = None, timeout: float = 30.0,
                        ) -> Latencies:
    """didChange -> publishDiagnostics (for the document, or for every uri in wait_uris)."""
    text = document.read_text()
    uri = client.did_open(document, language, text)
    result = Latencies()
    if not await client.wait_for(lambda: bool(client.published_since(0, uri)), 60):
        result.note = "no diagnostics after didOpen"
    await settle(client)
    targets = set(wait_uris) if wait_uris else {uri}
    for i in range(edits):
        text, changes = edit(text, i)
        mark = len(client.published)
        sent = time.perf_counter()
        client.did_change(uri, i + 2, changes)

        def arrived(mark: int = mark, version: int = i + 2) -> bool:
            got = {p.uri for p in client.published_since(mark)
                   if p.uri != uri or p.version is None or p.version >= version}
            return targets <= got

        if await client.wait_for(arrived, timeout):
            last = {}
            for p in client.published_since(mark):
                if p.uri in targets and p.uri not in last:
                    last[p.uri] = p.at
            result.values_ms.append((max(last.values()) - sent) * 1000)
        else:
            result.missing += 1
            if result.missing >= 3:
                result.note = f"stopped after {result.missing} edits without a full answer"
                break
        await settle(client)
    return result


async def settle(client: LspProcess, quiet: float = 0.05, limit: float = 2.0) -> None:
    """Wait until no diagnostics arrived for `quiet` seconds (late publishes of an edit)."""
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        count = len(client.published)
        await asyncio.sleep(quiet)
        if len(client.published) == count:
            return


# -- report ---------------------------------------------------------------------------------


def fmt_ms(value: float | None) -> str:
    return "—" if value is None else f"{value:8.1f}"


def net(value: float | None, key: str) -> float | None:
    return None if value is None else max(0.0, value - DELAY_MS[key])


def ratio(ours: float | None, peer: float | None) -> str:
    if not ours or not peer:
        return "—"
    return f"{ours / peer:5.2f}x"


async def run(args: argparse.Namespace) -> dict[str, Any]:
    srv = servers()
    work = WORK / f"lsp-{os.getpid()}"  # private: other benchmarks share bench/.work
    work.mkdir(parents=True)
    try:
        return await measure_all(args, srv, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


async def measure_all(args: argparse.Namespace, srv: dict[str, Server], work: Path,
                      ) -> dict[str, Any]:
    logs = work / "logs"
    logs.mkdir()
    example_root = work / "example"
    shutil.copytree(EXAMPLES, example_root)
    example = example_pipeline(example_root)
    big_root = work / "big"
    big = make_big(big_root)
    many_root = work / "many"
    shared, dependents = make_many(many_root)
    out: dict[str, Any] = {"edits": args.edits, "starts": args.starts,
                           "example": str(example.relative_to(example_root)),
                           "cpus": os.cpu_count(), "load_before": os.getloadavg()[0]}

    print(f"start to first diagnostics ({args.starts} runs each, median) on "
          f"{example.relative_to(example_root)} ...", flush=True)
    starts: dict[str, Any] = {}
    for key in ("budgetlens", "floor", "yaml-ls"):
        times, rss = await measure_start(srv[key], example_root, example, "yaml", args.starts,
                                         logs / f"start-{key}.log")
        starts[key] = {"median_ms": statistics.median(times) * 1000 if times else None,
                       "min_ms": min(times) * 1000 if times else None,
                       "runs_ms": [t * 1000 for t in times], "peak_rss_kib": max(rss or [0])}
    out["start"] = starts

    scenarios: dict[str, Any] = {}
    plan = [
        ("example pipeline", example_root, example, "yaml", number_edit("max_context_tokens"),
         None, args.edits),
        ("500 steps, 5-level extends", big_root, big, "yaml",
         number_edit("max_context_tokens"), None, args.edits),
        ("1,000 pipelines, prompt used by 200", many_root, shared, "plaintext", prompt_edit,
         [p.as_uri() for p in dependents], max(4, args.edits // 4)),
    ]
    for title, root, document, language, edit, wait_uris, count in plan:
        scenarios[title] = {}
        for key in ("budgetlens", "yaml-ls"):
            print(f"{title}: {count} edits against {srv[key].name} ...", flush=True)
            targets = wait_uris if key == "budgetlens" else None
            client = await launch(srv[key], root, logs / f"{key}-{root.name}.log")
            try:
                lat = await measure_edits(client, document, language, count, edit, targets,
                                          timeout=args.timeout)
                rss = client.peak_rss_kib()
            finally:
                await client.close()
            scenarios[title][key] = {"p50_ms": lat.quantile(0.5), "p95_ms": lat.quantile(0.95),
                                     "answered": len(lat.values_ms), "missing": lat.missing,
                                     "note": lat.note, "peak_rss_kib": rss,
                                     "waited_for": len(targets) if targets else 1,
                                     "values_ms": [round(v, 2) for v in lat.values_ms]}
    out["scenarios"] = scenarios
    out["load_after"] = os.getloadavg()[0]
    out["work"] = str(work)
    return out


def print_report(out: dict[str, Any]) -> None:
    print()
    print(f"machine: {out['cpus']} CPUs, 1-minute load average {out['load_before']:.1f} before,"
          f" {out['load_after']:.1f} after (figures from a busy machine are noisier)")
    print(f"== start to first diagnostics ({out['starts']} runs) ==")
    s = out["start"]
    for key, label in (("budgetlens", "budgetlens"), ("floor", "bare pygls (floor)"),
                       ("yaml-ls", "yaml-language-server")):
        print(f"  {label:24} median {fmt_ms(s[key]['median_ms'])} ms  min "
              f"{fmt_ms(s[key]['min_ms'])} ms   peak RSS {s[key]['peak_rss_kib'] / 1024:6.1f} MiB")
    ours = s["budgetlens"]["median_ms"]
    print(f"  budgetlens / floor     {ratio(ours, s['floor']['median_ms'])}")
    print(f"  budgetlens / yaml-ls   {ratio(ours, s['yaml-ls']['median_ms'])}")
    print()
    print("== didChange -> publishDiagnostics (ms) ==")
    print(f"  {'scenario':40} {'server':22} {'p50':>8} {'p95':>8}  {'n':>4} {'RSS MiB':>8}"
          f"  {'p50 net':>8} {'p95 net':>8}")
    for title, by_server in out["scenarios"].items():
        for key, label in (("budgetlens", "budgetlens"), ("yaml-ls", "yaml-language-server")):
            r = by_server[key]
            rss = r["peak_rss_kib"] / 1024 if r["peak_rss_kib"] else 0.0
            extra = f"  ({r['note']})" if r["note"] else ""
            if r["missing"]:
                extra += f"  {r['missing']} edits unanswered"
            print(f"  {title:40} {label:22} {fmt_ms(r['p50_ms'])} {fmt_ms(r['p95_ms'])}  "
                  f"{r['answered']:4d} {rss:8.1f}  {fmt_ms(net(r['p50_ms'], key))} "
                  f"{fmt_ms(net(r['p95_ms'], key))}{extra}")
        ours_r, peer_r = by_server["budgetlens"], by_server["yaml-ls"]
        label = "ratio ours/peer" if "prompt used by" not in title else "ratio (other job)"
        print(f"  {'':40} {label:22} {ratio(ours_r['p50_ms'], peer_r['p50_ms']):>8}"
              f" {ratio(ours_r['p95_ms'], peer_r['p95_ms']):>8}  {'':4} {'':8}  "
              f"{ratio(net(ours_r['p50_ms'], 'budgetlens'), net(peer_r['p50_ms'], 'yaml-ls')):>8}"
              f" {ratio(net(ours_r['p95_ms'], 'budgetlens'), net(peer_r['p95_ms'], 'yaml-ls')):>8}")
    print()
    print("Notes: 'net' subtracts the deliberate wait before a lone edit is diagnosed:")
    print(f"  budgetlens {DELAY_MS['budgetlens']:.0f} ms (its debounce only delays bursts),"
          f" yaml-language-server {DELAY_MS['yaml-ls']:.0f} ms (validationDelayMs).")
    print("  The 1,000-pipeline figure for budgetlens waits until all 200 dependents are")
    print("  re-published; yaml-language-server has no cross-file model, so its figure for that")
    print("  edit is only the prompt buffer's own diagnostics (a different job).")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edits", type=int, default=60, help="edits per scenario (default 60)")
    parser.add_argument("--starts", type=int, default=5, help="start runs per server")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait per edit")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--keep", action="store_true",
                        help="keep the generated workspaces and logs (bench/.work/lsp-PID)")
    args = parser.parse_args()
    out = asyncio.run(run(args))
    print_report(out)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
