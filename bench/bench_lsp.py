"""LSP benchmark: budgetlens serve vs a bare pygls server (the floor) and yaml-language-server.

One run measures, with a real LSP client over stdio (bench/lsp_client.py), every language-
server row of issue 12's table, the bare pygls server (bench/floor_server.py) in the same run:

1. server start to first diagnostics (spawn -> initialize -> didOpen -> publishDiagnostics),
   median of --starts runs, budgetlens and the floor (and yaml-language-server, the peer);
2. didChange -> publishDiagnostics p50/p95, one edit at a time (each edit a new text, so no
   content cache can answer it), budgetlens and the floor, on
   a. the example over-budget pipeline (examples/),
   b. a generated 500-step pipeline at the end of a 5-level extends chain,
   c. a generated 1,000-pipeline workspace after editing a prompt used by 200 pipelines
      (latency until every one of the 200 dependents has been re-published);
3. typing --keystrokes keystrokes every 50 ms in (b): last keystroke -> the last version's
   diagnostics, versions analysed (from the server's log), pushes, pushes older than one
   already received;
4. typing --keystrokes keystrokes every 50 ms in the prompt of (c): last keystroke -> final
   diagnostics, pushes;
5. opening a pipeline in the 1,000-pipeline workspace (didOpen right after initialized) ->
   its diagnostics;
6. RSS (VmRSS) growth over --rss-edits edits of (b);
7. peak RSS (VmHWM) of each server process;
8. the share of CPU time the hypervisor gave to other guests (steal, bench/machine.py) over
   the run and over each server's edits in (2): on a 2-core virtual machine a few per cent
   of it puts a 5 ms round trip's p95 over 10 ms.

The figures are printed with their goals and ratios to the floor, and written as JSON with
--json. --quick runs small sizes (a smoke test); --no-peer leaves yaml-language-server out
(it is left out anyway when bench/node_modules lacks it). Every process is ended by its PID.

    .venv/bin/python bench/bench_lsp.py [--quick] [--edits 60] [--starts 5] [--keystrokes 60]
        [--rss-edits 1000] [--no-peer] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
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
from machine import cpu_times, fmt_steal, steal_percent
from workspaces import make_big, make_many, words

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
WORK = BENCH / ".work"
EXAMPLES = REPO / "examples"
YAML_LS = BENCH / "node_modules" / "yaml-language-server" / "bin" / "yaml-language-server"


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


#: budgetlens serve, exactly as `budgetlens serve` runs it.
SERVE = (
    "import argparse\n"
    "from budgetlens_lsp.serve import add_arguments, run\n"
    "parser = argparse.ArgumentParser()\n"
    "add_arguments(parser)\n"
    "run(parser.parse_args([]))\n")
#: The same with the session's log at INFO (one line per analysis, so the benchmark can
#: count the versions analysed).
LOGGED_SERVE = ("import logging\n"
                "logging.getLogger('budgetlens_lsp.session').setLevel(logging.INFO)\n"
                + SERVE)


#: With --pygls-stdin: the server reads standard input with pygls's own reader (threads).
PYGLS_STDIN = ("import budgetlens_lsp.stdio as _stdio\n"
               "_stdio.loop_readable = lambda *args: False  # pygls's reader\n")


def servers(peer: bool = True, pygls_stdin: bool = False) -> dict[str, Server]:
    budgetlens = shutil.which("budgetlens", path=f"{Path(sys.executable).parent}{os.pathsep}"
                                                 f"{os.environ.get('PATH', '')}")
    if budgetlens is None:
        sys.exit("budgetlens is not installed (pip install -e . in the venv)")
    ours = [budgetlens, "serve"]
    if pygls_stdin:  # `serve` as LOGGED_SERVE runs it, without the log
        ours = [sys.executable, "-c", PYGLS_STDIN + SERVE]
    out = {
        "budgetlens": Server("budgetlens", ours, OURS_SETTINGS, {}),
        "budgetlens-logged": Server("budgetlens", [sys.executable, "-c", LOGGED_SERVE],
                                    OURS_SETTINGS, {}),
        "floor": Server("pygls floor", [sys.executable, str(BENCH / "floor_server.py")], {}),
    }
    node = shutil.which("node")
    if peer and YAML_LS.is_file() and node is not None:
        out["yaml-ls"] = Server("yaml-language-server", [node, str(YAML_LS), "--stdio"],
                                YAML_SETTINGS)
    elif peer:
        print(f"yaml-language-server left out: run `npm ci` in {BENCH} (and install node)",
              flush=True)
    return out


async def launch(server: Server, root: Path, log: Path) -> LspProcess:
    client = LspProcess(server.command, cwd=root, settings=server.settings, stderr_path=log)
    await client.start()
    await client.initialize(root, server.init_options)
    return client


# -- generated workspaces -----------------------------------------------------------------












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

#: The rows one run can measure (--rows): start-up, the three didChange scenarios, the two
#: typing bursts, opening in a large workspace, RSS growth.
ROWS = ("start", "example", "big", "many", "typing-big", "typing-prompt", "open", "rss")


@dataclass
class Latencies:
    values_ms: list[float] = field(default_factory=list)
    missing: int = 0
    note: str = ""
    cpu_s: float = 0.0  # the server's CPU time over the edits (their analyses included)
    switches: int = 0  # the server's context switches over the edits, all threads
    steal_percent: float | None = None  # the machine's CPU time stolen over the edits

    def quantile(self, q: float) -> float | None:
        if not self.values_ms:
            return None
        ordered = sorted(self.values_ms)
        index = min(len(ordered) - 1, max(0, round(q * len(ordered) + 0.5) - 1))
        return ordered[index]


async def _start_once(server: Server, root: Path, document: Path, language: str,
                      env: dict[str, str], log: Path) -> tuple[float | None, int]:
    """One spawn -> first publishDiagnostics for `document` (seconds, or None), peak RSS."""
    client = LspProcess(server.command, cwd=root, env=env, settings=server.settings,
                        stderr_path=log)
    try:
        await client.start()
        await client.initialize(root, server.init_options)
        uri = client.did_open(document, language, document.read_text())
        published = await client.wait_for(
            lambda c=client, u=uri: bool(c.published_since(0, u)), 60)
        at = client.published_since(0, uri)[0].at - client.started_at if published else None
        return at, client.peak_rss_kib() or 0
    finally:
        await client.close()


async def measure_starts(servers: dict[str, Server], root: Path, document: Path,
                         language: str, runs: int, logs: Path,
                         ) -> dict[str, tuple[list[float], list[int]]]:
    """Spawn -> first publishDiagnostics for `document`, `runs` times per server (seconds),
    and their peak RSS.

    The servers take turns, one start each per round, so a machine that slows down or
    speeds up during the measurement (other work, CPU frequency) weighs on every server
    alike; the rounds pair the starts for the per-round differences.

    One untimed start per server comes first, and every start may write Python bytecode: an
    installed server has its .pyc files (pip compiles them at install), so a start compiling
    the package's sources again (PYTHONDONTWRITEBYTECODE in the benchmark's environment, or
    a checkout changed since its last run) would measure the compiler, not the server. The
    same holds for every server measured (the floor's libraries are compiled already).
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    out: dict[str, tuple[list[float], list[int]]] = {key: ([], []) for key in servers}
    for attempt in range(runs + 1):
        for key, server in servers.items():
            at, rss = await _start_once(server, root, document, language, env,
                                        logs / f"start-{key}.log")
            if attempt == 0:
                continue  # the untimed start
            if at is not None:
                out[key][0].append(at)
            out[key][1].append(rss)
    return out


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
    await flush(client, uri)
    await settle(client)
    targets = set(wait_uris) if wait_uris else {uri}
    cpu_before, switches_before = cpu_seconds(client), context_switches(client)
    machine_before = cpu_times()
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
    result.cpu_s = cpu_seconds(client) - cpu_before
    result.switches = context_switches(client) - switches_before
    result.steal_percent = steal_percent(machine_before, cpu_times())
    return result


async def flush(client: LspProcess, uri: str) -> None:
    """A request: budgetlens answers it only once every pending analysis, background index
    included, is done (the floor answers with an error at once)."""
    with contextlib.suppress(Exception):
        await client.request("textDocument/codeLens", {"textDocument": {"uri": uri}}, 300)


async def settle(client: LspProcess, quiet: float = 0.05, limit: float = 2.0) -> None:
    """Wait until no diagnostics arrived for `quiet` seconds (late publishes of an edit)."""
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        count = len(client.published)
        await asyncio.sleep(quiet)
        if len(client.published) == count:
            return


def typing_edit(text: str, i: int) -> tuple[str, list[dict[str, Any]]]:
    """Keystroke i overtypes the last two digits of the first `max_context_tokens: N` line's
    number with i + 1 (3000 -> 3001 -> ... -> 3060: one character changes, two at every
    tenth), so every version is a text no analysis saw before (a text that came back, as
    when a digit is typed and deleted again, would be answered from the report cache)."""
    match = re.search(r"max_context_tokens:\s*(\d+)", text)
    assert match, "max_context_tokens not found"
    end = match.end(1)
    start = max(match.start(1), end - 2)
    digits = f"{(i + 1) % 100:02d}"[-(end - start):]
    change = {"range": {"start": position(text, start), "end": position(text, end)},
              "text": digits}
    return text[:start] + digits + text[end:], [change]


def prompt_typing_edit(text: str, i: int) -> tuple[str, list[dict[str, Any]]]:
    """Keystroke i types one more word character at the end of the prompt."""
    end = position(text, len(text))
    ch = "ab"[i % 2]
    return text + ch, [{"range": {"start": end, "end": end}, "text": ch}]


def analyses_in(log: Path) -> int:
    """The analyses budgetlens logged (LOGGED_SERVE), one line each."""
    try:
        return len(re.findall(r"budgetlens_lsp\.session: analysis \d+:", log.read_text()))
    except OSError:
        return 0


def _thread_files(client: LspProcess, name: str) -> list[str]:
    """The ``/proc`` file ``name`` of each of the server's threads (none off Linux, or once
    the server is gone; a thread that ends meanwhile is left out)."""
    texts = []
    with contextlib.suppress(OSError):
        for task in os.listdir(f"/proc/{client.pid}/task"):
            with contextlib.suppress(OSError):
                texts.append(Path(f"/proc/{client.pid}/task/{task}/{name}").read_text())
    return texts


def cpu_seconds(client: LspProcess) -> float:
    """CPU time of the server process so far, all its threads (Linux /proc; 0 elsewhere).

    From each thread's ``schedstat`` (nanoseconds), else from the process's ``stat``
    (user + system, in clock ticks of 10 ms: an edit of the example is a third of one).
    A thread that ended since the last reading takes its time with it; the server's
    threads (the loop, the analysis thread) live as long as it does."""
    with contextlib.suppress(ValueError, IndexError):
        runs = [int(text.split()[0]) for text in _thread_files(client, "schedstat")]
        if runs:
            return sum(runs) / 1e9
    with contextlib.suppress(OSError, ValueError, IndexError):
        fields = Path(f"/proc/{client.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return 0.0


def context_switches(client: LspProcess) -> int:
    """The server's context switches so far, voluntary and not, over its threads (Linux
    /proc; 0 elsewhere): each time a thread sleeps to wait for another counts one."""
    return sum(int(line.split()[1]) for text in _thread_files(client, "status")
               for line in text.splitlines()
               if "ctxt_switches:" in line)  # voluntary_ and nonvoluntary_


def analysis_outcomes(log: Path) -> dict[str, int]:
    """How budgetlens's logged analyses ended (LOGGED_SERVE): delivered, held (superseded),
    and forced ones stopped for the end of a burst."""
    try:
        text = log.read_text()
    except OSError:
        return {"delivered": 0, "held": 0, "forced_stopped": 0}
    return {"delivered": len(re.findall(r"session: analysis \d+ delivered:", text)),
            "held": len(re.findall(r"session: analysis \d+ held", text)),
            "forced_stopped": text.count("forced analysis stopped")}


async def measure_typing(server: Server, root: Path, document: Path, language: str,
                         keystrokes: int, edit: Callable[[str, int], tuple[str, list[
                             dict[str, Any]]]], log: Path, prepare: Callable[[str], str]
                         | None = None, gap: float = 0.05) -> dict[str, Any]:
    """A burst of keystrokes `gap` apart; what arrives after the last one."""
    client = await launch(server, root, log)
    try:
        text = document.read_text()
        uri = client.did_open(document, language, text)
        await client.wait_for(lambda: bool(client.published_since(0, uri)), 120)
        version = 1
        if prepare is not None:  # e.g. put the prompt over budget first
            new = prepare(text)
            version += 1
            client.did_change(uri, version, [{"text": new}])
            text = new
            await client.wait_for(lambda: bool(client.published_since(0, uri, version)), 120)
        await flush(client, uri)
        await settle(client, 0.3, 30)
        before_analyses = analyses_in(log)
        before_outcomes = analysis_outcomes(log)
        cpu_before = cpu_seconds(client)
        mark = len(client.published)
        started = time.perf_counter()
        last_sent = started
        for i in range(keystrokes):
            text, changes = edit(text, i)
            version += 1
            client.did_change(uri, version, changes)
            last_sent = time.perf_counter()  # the last keystroke: measured from its sending
            await asyncio.sleep(max(0.0, started + (i + 1) * gap - time.perf_counter()))
        last = version
        got = await client.wait_for(
            lambda: any(p.uri == uri and p.version == last for p in client.published[mark:]),
            120)
        await settle(client, 0.5, 60)
        burst = client.published[mark:]
        after = [p for p in burst if p.at >= last_sent]
        final_at = max((p.at for p in after), default=None)
        mine = [p.version for p in burst if p.uri == uri and p.version is not None]
        backwards = sum(1 for a, b in itertools.pairwise(mine) if b < a)
        older_after_last = sum(1 for p in after if p.uri == uri and p.version is not None
                               and p.version < last)
        rss = client.peak_rss_kib()
        cpu = cpu_seconds(client) - cpu_before  # the burst and its analyses, to the settle
    finally:
        await client.close()
    await asyncio.sleep(0.2)  # the log's last lines
    outcomes = {k: v - before_outcomes[k] for k, v in analysis_outcomes(log).items()}
    return {**{f"analyses_{k}": v for k, v in outcomes.items()},
            "keystrokes": keystrokes, "gap_ms": gap * 1000, "last_version_pushed": got,
            "final_ms": (final_at - last_sent) * 1000 if got and final_at else None,
            "analyses": analyses_in(log) - before_analyses,
            "versions_pushed": len(set(mine)), "pushes": len(burst),
            "pushes_after_last_keystroke": len(after), "out_of_order": backwards,
            "older_than_last_after_last_keystroke": older_after_last, "peak_rss_kib": rss,
            "server_cpu_s": round(cpu, 3)}


async def measure_bursts(bursts: int, *args: Any, **kwargs: Any) -> dict[str, Any]:
    """``measure_typing`` ``bursts`` times (a new server each time): the median burst's
    figures, with every burst's final time and the counts over all of them. Each burst has
    its own server log (``typing-prompt-2.log``: the log argument, numbered)."""
    runs = []
    for i in range(bursts):
        call = list(args)
        if bursts > 1:  # args[6]: the log
            call[6] = Path(call[6]).with_name(f"{Path(call[6]).stem}-{i + 1}.log")
        runs.append(await measure_typing(*call, **kwargs))
    finals = [r["final_ms"] for r in runs]
    timed = sorted((r for r in runs if r["final_ms"] is not None), key=lambda r: r["final_ms"])
    out = dict(timed[(len(timed) - 1) // 2] if timed else runs[0])
    out.update(bursts=bursts, finals_ms=[None if f is None else round(f, 1) for f in finals],
               final_ms=statistics.median(r["final_ms"] for r in timed) if timed else None,
               last_version_pushed=all(r["last_version_pushed"] for r in runs),
               out_of_order=sum(r["out_of_order"] for r in runs),
               **{f"all_{k}": sum(r[k] for r in runs) for k in (
                   "analyses", "analyses_delivered", "analyses_held",
                   "analyses_forced_stopped", "pushes", "server_cpu_s")},
               older_than_last_after_last_keystroke=sum(
                   r["older_than_last_after_last_keystroke"] for r in runs))
    return out


async def measure_open(server: Server, root: Path, document: Path, log: Path
                       ) -> dict[str, Any]:
    """didOpen right after initialized in a large workspace -> the document's diagnostics."""
    client = LspProcess(server.command, cwd=root, settings=server.settings, stderr_path=log)
    try:
        await client.start()
        await client.initialize(root, server.init_options)
        sent = time.perf_counter()
        uri = client.did_open(document, "yaml", document.read_text())
        ok = await client.wait_for(lambda: bool(client.published_since(0, uri)), 300)
        first = client.published_since(0, uri)[0].at if ok else None
        return {"open_to_diagnostics_ms": (first - sent) * 1000 if first else None,
                "start_to_diagnostics_ms": (first - client.started_at) * 1000
                if first else None}
    finally:
        await client.close()


async def measure_opens(server: Server, root: Path, document: Path, runs: int, logs: Path
                        ) -> dict[str, Any]:
    """:func:`measure_open` ``runs`` times, each with a new server: the median and every
    run (one open is one sample of a few tens of milliseconds: too few to compare by)."""
    measured = [await measure_open(server, root, document, logs / f"open-large-{i}.log")
                for i in range(max(1, runs))]
    times = [m["open_to_diagnostics_ms"] for m in measured]
    known = [t for t in times if t is not None]
    return {"open_to_diagnostics_ms": statistics.median(known) if len(known) == len(times)
            else None, "runs_ms": times}


def rss_kib(client: LspProcess) -> int:
    """VmRSS (current resident set) of the server process, in KiB."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{client.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def measure_rss(server: Server, root: Path, document: Path, edits: int, log: Path
                      ) -> dict[str, Any]:
    """RSS after 10 warm-up edits and after `edits` more, one at a time (each answered)."""
    client = await launch(server, root, log)
    try:
        text = document.read_text()
        uri = client.did_open(document, "yaml", text)
        await client.wait_for(lambda: bool(client.published_since(0, uri)), 120)
        await flush(client, uri)
        edit = number_edit("max_context_tokens")
        version = 1
        start_rss = 0
        for i in range(edits + 10):
            if i == 10:
                start_rss = rss_kib(client)
            text, changes = edit(text, i % 1000)
            version += 1
            client.did_change(uri, version, changes)
            await client.wait_for(lambda v=version: bool(client.published_since(0, uri, v)),
                                  60)
        end_rss = rss_kib(client)
    finally:
        await client.close()
    return {"edits": edits, "rss_start_kib": start_rss, "rss_end_kib": end_rss,
            "growth_mib": (end_rss - start_rss) / 1024}


async def run(args: argparse.Namespace) -> dict[str, Any]:
    srv = servers(peer=not args.no_peer, pygls_stdin=args.pygls_stdin)
    # private: other benchmarks share bench/.work
    work = (args.work_dir or WORK) / f"lsp-{os.getpid()}"
    work.mkdir(parents=True)
    try:
        return await measure_all(args, srv, work)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def lat_row(lat: Latencies, rss: int | None, targets: list[str] | None) -> dict[str, Any]:
    return {"p50_ms": lat.quantile(0.5), "p95_ms": lat.quantile(0.95),
            "answered": len(lat.values_ms), "missing": lat.missing, "note": lat.note,
            "peak_rss_kib": rss, "waited_for": len(targets) if targets else 1,
            "values_ms": [round(v, 2) for v in lat.values_ms],
            "server_cpu_ms_per_edit": round(lat.cpu_s * 1000 / max(1, len(lat.values_ms)), 1),
            "server_switches_per_edit": round(lat.switches / max(1, len(lat.values_ms)), 1),
            "steal_percent": lat.steal_percent}


# long-function: one straight list of scenarios, each a few lines
async def measure_all(args: argparse.Namespace, srv: dict[str, Server], work: Path,
                      ) -> dict[str, Any]:
    logs = work / "logs"
    logs.mkdir()
    example_root = work / "example"
    shutil.copytree(EXAMPLES, example_root)
    example = example_pipeline(example_root)
    big_root = work / "big"
    big = make_big(big_root, args.big_steps)
    many_root = work / "many"
    shared, dependents = make_many(many_root, args.pipelines, args.shared_by)
    out: dict[str, Any] = {"edits": args.edits, "starts": args.starts, "quick": args.quick,
                           "big_steps": args.big_steps, "pipelines": args.pipelines,
                           "shared_by": args.shared_by,
                           "example": str(example.relative_to(example_root)),
                           "cpus": os.cpu_count(), "load_before": os.getloadavg()[0]}
    machine_before = cpu_times()
    peers = [k for k in ("yaml-ls",) if k in srv]

    rows = args.rows
    if "start" in rows:
        print(f"start to first diagnostics ({args.starts} runs each, median) on "
              f"{example.relative_to(example_root)} ...", flush=True)
        starts: dict[str, Any] = {}
        measured = await measure_starts({key: srv[key] for key in ("budgetlens", "floor",
                                                                    *peers)},
                                        example_root, example, "yaml", args.starts, logs)
        for key, (times, rss) in measured.items():
            starts[key] = {"median_ms": statistics.median(times) * 1000 if times else None,
                           "min_ms": min(times) * 1000 if times else None,
                           "runs_ms": [t * 1000 for t in times],
                           "peak_rss_kib": max(rss or [0])}
        ours_runs, floor_runs = starts["budgetlens"]["runs_ms"], starts["floor"]["runs_ms"]
        if ours_runs and len(ours_runs) == len(floor_runs):
            starts["over_floor_ms"] = statistics.median(
                o - f for o, f in zip(ours_runs, floor_runs, strict=True))
        out["start"] = starts

    scenarios: dict[str, Any] = {}
    plan = [
        ("example", "example pipeline", example_root, example, "yaml",
         number_edit("max_context_tokens"), None, args.edits, ("budgetlens", "floor", *peers)),
        ("big", f"{args.big_steps} steps, 5-level extends", big_root, big, "yaml",
         number_edit("max_context_tokens"), None, args.edits, ("budgetlens", "floor", *peers)),
        ("many", f"{args.pipelines:,} pipelines, prompt used by {args.shared_by}",
         many_root, shared,
         "plaintext", prompt_edit, [p.as_uri() for p in dependents], max(4, args.edits // 4),
         ("budgetlens", *peers)),
    ]
    for row_key, title, root, document, language, edit, wait_uris, count, keys in plan:
        if row_key not in rows:
            continue
        out.setdefault("scenario_titles", {})[row_key] = title
        scenarios[title] = {}
        for key in keys:
            print(f"{title}: {count} edits against {srv[key].name} ...", flush=True)
            targets = wait_uris if key == "budgetlens" else None
            client = await launch(srv[key], root, logs / f"{key}-{root.name}.log")
            try:
                lat = await measure_edits(client, document, language, count, edit, targets,
                                          timeout=args.timeout)
                rss = client.peak_rss_kib()
            finally:
                await client.close()
            scenarios[title][key] = lat_row(lat, rss, targets)
    out["scenarios"] = scenarios

    if "typing-big" in rows:
        print(f"typing {args.keystrokes} keystrokes at 50 ms in the {args.big_steps}-step"
              " pipeline ...", flush=True)
        out["typing_big"] = await measure_bursts(args.bursts, srv["budgetlens-logged"],
                                                 big_root, big, "yaml", args.keystrokes,
                                                 typing_edit, logs / "typing-big.log")
    if "typing-prompt" in rows:
        print(f"typing {args.keystrokes} keystrokes at 50 ms in the prompt used by"
              f" {args.shared_by} ...", flush=True)
        out["typing_prompt"] = await measure_bursts(
            args.bursts, srv["budgetlens-logged"], many_root, shared, "plaintext", args.keystrokes,
            prompt_typing_edit, logs / "typing-prompt.log",
            prepare=lambda t: t + "\n<<filler>> " + words(6000, 1) + "\n")
    if "open" in rows:
        print(f"opening a pipeline in the {args.pipelines:,}-pipeline workspace ...",
              flush=True)
        last_pipeline = sorted((many_root / "pipelines").glob("p*.yaml"))[-1]
        out["open_in_large"] = await measure_opens(srv["budgetlens"], many_root, last_pipeline,
                                                   args.starts, logs)
    if "rss" in rows:
        print(f"RSS over {args.rss_edits} edits of the {args.big_steps}-step pipeline ...",
              flush=True)
        out["rss"] = await measure_rss(srv["budgetlens"], big_root, big, args.rss_edits,
                                       logs / "rss.log")
    out["load_after"] = os.getloadavg()[0]
    out["steal_percent"] = steal_percent(machine_before, cpu_times())
    out["work"] = str(work)
    out["table"] = goal_table(out)
    return out


# -- report ---------------------------------------------------------------------------------


class _Table:
    """Issue 12's language-server rows, as far as the run measured them."""

    def __init__(self) -> None:
        self.rows: list[dict[str, Any]] = []

    def row(self, measure: str, figure: float | None, floor: float | None, goal: str,
            met: bool | None, unit: str = "ms", extra: str = "") -> None:
        self.rows.append({"measure": measure, "figure": figure, "floor": floor, "goal": goal,
                          "met": met, "unit": unit, "extra": extra})

    def latency(self, measure: str, sc: dict[str, Any], goal_ms: float) -> None:
        ours = sc["budgetlens"]
        self.row(measure, ours["p95_ms"], sc["floor"]["p95_ms"] if "floor" in sc else None,
                 f"<= {goal_ms:,.0f} ms", le(ours["p95_ms"], goal_ms),
                 extra=f"p50 {fmt_ms(ours['p50_ms']).strip()}; steal"
                       f" {fmt_steal(ours.get('steal_percent'))}")


def le(value: float | None, bound: float) -> bool | None:
    return None if value is None else value <= bound


def goal_table(out: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 12's language-server rows: measure, figure, floor, goal, met (the rows that
    --rows left out are not in the table)."""
    sc = out["scenarios"]
    titles = out.get("scenario_titles", {})
    table = _Table()
    if "example" in titles:
        table.latency("didChange -> publish, example pipeline, p95", sc[titles["example"]], 10)
    if "big" in titles:
        table.latency(f"same, {titles['big']}, p95", sc[titles["big"]], 100)
    if "typing_big" in out:
        tb = out["typing_big"]
        table.row(f"typing {tb['keystrokes']} keystrokes at 50 ms in the {out['big_steps']}"
                  "-step pipeline: last keystroke -> final", tb["final_ms"], None,
                  "<= 150 ms; no older publish",
                  None if tb["final_ms"] is None
                  else tb["final_ms"] <= 150 and tb["out_of_order"] == 0,
                  extra=f"{tb['analyses']} analyses of {tb['keystrokes']} versions,"
                        f" {tb['versions_pushed']} versions pushed,"
                        f" {tb['out_of_order']} out of order" + _bursts(tb))
    if "many" in titles:
        table.latency(f"edit a prompt used by {out['shared_by']} of {out['pipelines']:,}: all"
                      " re-published, p95", sc[titles["many"]], 300)
    if "typing_prompt" in out:
        tp = out["typing_prompt"]
        table.row(f"typing in that prompt ({tp['keystrokes']} keystrokes): final",
                  tp["final_ms"], None, "<= 400 ms; publishes bounded by analyses",
                  le(tp["final_ms"], 400),
                  extra=f"{tp['pushes']} pushes, {tp['analyses']} analyses"
                        + _outcomes(tp) + _bursts(tp))
    _other_rows(table, out)
    return table.rows


def _outcomes(typing: dict[str, Any]) -> str:
    """How the median burst's analyses ended (from the server's log)."""
    if "analyses_delivered" not in typing:
        return ""
    return (f" ({typing['analyses_delivered']} delivered, {typing['analyses_held']} held,"
            f" {typing['analyses_forced_stopped']} forced stopped)")


def _bursts(typing: dict[str, Any]) -> str:
    """The final times of every burst, when there were several (the figure is their
    median; the counts before it are the median burst's, out of order over all)."""
    if typing.get("bursts", 1) <= 1:
        return ""
    finals = ", ".join("—" if f is None else f"{f:.0f}" for f in typing["finals_ms"])
    return f"; median of {typing['bursts']} bursts: {finals} ms"


def _other_rows(table: _Table, out: dict[str, Any]) -> None:
    if "start" in out:
        floor_start = out["start"]["floor"]["median_ms"]
        ours_start = out["start"]["budgetlens"]["median_ms"]
        table.row("server start -> first diagnostics, one open file", ours_start, floor_start,
                  "<= floor + 200 ms", None if ours_start is None or floor_start is None
                  else ours_start <= floor_start + 200)
    if "open_in_large" in out:
        op = out["open_in_large"]
        table.row(f"open a file in a {out['pipelines']:,}-pipeline workspace -> its"
                  " diagnostics", op["open_to_diagnostics_ms"], None, "<= 1,500 ms",
                  le(op["open_to_diagnostics_ms"], 1500))
    if "rss" in out:
        rs = out["rss"]
        table.row(f"RSS growth over {rs['edits']} edits of the {out['big_steps']}-step"
                  " pipeline", rs["growth_mib"], None, "<= +20 MB over 1,000 edits",
                  rs["growth_mib"] <= 20, unit="MiB",
                  extra=f"{rs['rss_start_kib'] / 1024:.0f} -> {rs['rss_end_kib'] / 1024:.0f}"
                        " MiB")


def fmt_ms(value: float | None) -> str:
    return "—" if value is None else f"{value:8.1f}"


def net(value: float | None, key: str) -> float | None:
    return None if value is None else max(0.0, value - DELAY_MS[key])


def ratio(ours: float | None, peer: float | None) -> str:
    if not ours or not peer:
        return "—"
    return f"{ours / peer:5.2f}x"


def print_start(out: dict[str, Any]) -> None:
    print(f"== start to first diagnostics ({out['starts']} runs) ==")
    s = out["start"]
    for key, label in (("budgetlens", "budgetlens"), ("floor", "bare pygls (floor)"),
                       ("yaml-ls", "yaml-language-server")):
        if key in s:
            print(f"  {label:24} median {fmt_ms(s[key]['median_ms'])} ms  min "
                  f"{fmt_ms(s[key]['min_ms'])} ms   peak RSS"
                  f" {s[key]['peak_rss_kib'] / 1024:6.1f} MiB")
    ours = s["budgetlens"]["median_ms"]
    print(f"  budgetlens / floor     {ratio(ours, s['floor']['median_ms'])}")
    if s.get("over_floor_ms") is not None:
        print(f"  budgetlens - floor     median of the rounds' differences"
              f" {s['over_floor_ms']:+.1f} ms (the servers take turns, one start each)")
    if "yaml-ls" in s:
        print(f"  budgetlens / yaml-ls   {ratio(ours, s['yaml-ls']['median_ms'])}")
    print()


def print_report(out: dict[str, Any]) -> None:
    print()
    print(f"machine: {out['cpus']} CPUs, 1-minute load average {out['load_before']:.1f} before,"
          f" {out['load_after']:.1f} after; CPU time stolen by the hypervisor over the run:"
          f" {fmt_steal(out.get('steal_percent'))} (figures from a busy machine are noisier)")
    if "start" in out:
        print_start(out)
    print("== didChange -> publishDiagnostics (ms) ==")
    print(f"  {'scenario':40} {'server':22} {'p50':>8} {'p95':>8}  {'n':>4} {'RSS MiB':>8}"
          f" {'steal':>6}")
    for title, by_server in out["scenarios"].items():
        for key, r in by_server.items():
            rss = r["peak_rss_kib"] / 1024 if r["peak_rss_kib"] else 0.0
            extra = f"  ({r['note']})" if r["note"] else ""
            if r["missing"]:
                extra += f"  {r['missing']} edits unanswered"
            label = {"floor": "bare pygls (floor)", "yaml-ls": "yaml-language-server"}.get(
                key, key)
            print(f"  {title:40} {label:22} {fmt_ms(r['p50_ms'])} {fmt_ms(r['p95_ms'])}  "
                  f"{r['answered']:4d} {rss:8.1f} {fmt_steal(r.get('steal_percent')):>6}{extra}")
        if "floor" in by_server:
            ours_r, floor_r = by_server["budgetlens"], by_server["floor"]
            print(f"  {'':40} {'ratio to the floor':22} "
                  f"{ratio(ours_r['p50_ms'], floor_r['p50_ms']):>8}"
                  f" {ratio(ours_r['p95_ms'], floor_r['p95_ms']):>8}")
    print()
    print("== issue 12 goals ==")
    print(f"  {'measure':78} {'figure':>10} {'floor':>9} {'ratio':>7}  goal")
    for r in out["table"]:
        unit = r["unit"]
        fig = "—" if r["figure"] is None else f"{r['figure']:.1f} {unit}"
        flo = "—" if r["floor"] is None else f"{r['floor']:.1f}"
        met = {True: "met", False: "NOT met", None: "?"}[r["met"]]
        print(f"  {r['measure']:78} {fig:>10} {flo:>9} {ratio(r['figure'], r['floor']):>7}"
              f"  {r['goal']} — {met}" + (f"  ({r['extra']})" if r["extra"] else ""))
    print()
    print("Notes: the prompt-edit figure waits until all dependents are re-published; the")
    print("typing rows count analyses from the server's own log (one line per analysis).")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes, for a smoke test (5 edits, 1 start, 10 keystrokes,"
                             " 100 steps, 100 pipelines, 20 RSS edits)")
    parser.add_argument("--edits", type=int, default=None, help="edits per scenario (60)")
    parser.add_argument("--starts", type=int, default=None, help="start runs per server (5)")
    parser.add_argument("--keystrokes", type=int, default=None,
                        help="keystrokes per typing burst (60)")
    parser.add_argument("--bursts", type=int, default=1,
                        help="typing bursts per typing row, each with a new server; the"
                             " row shows the median (1)")
    parser.add_argument("--rss-edits", type=int, default=None,
                        help="edits for the RSS growth (1000)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait per edit")
    parser.add_argument("--no-peer", action="store_true", help="leave yaml-language-server out")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument("--rows", default=",".join(ROWS),
                        help="the rows to measure, comma-separated, from: " + ", ".join(ROWS)
                             + " (default: all)")
    parser.add_argument("--work-dir", type=Path, default=None,
                        help="where to generate the workspaces (default: bench/.work, inside"
                             " the checkout, which its .gitignore ignores: a server that"
                             " honours .gitignore reads it; a folder outside any repository"
                             " measures the same servers without that)")
    parser.add_argument("--keep", action="store_true",
                        help="keep the generated workspaces and logs (bench/.work/lsp-PID)")
    parser.add_argument("--default-switch-interval", action="store_true",
                        help="start the logged server (the typing rows') with Python's thread"
                             " switch interval, not session.SWITCH_INTERVAL_S: the ledger's"
                             " plain version of that trick (docs/performance.md)")
    parser.add_argument("--pygls-stdin", action="store_true",
                        help="start budgetlens with pygls's own reader of standard input (a"
                             " thread pool), not the event loop's (budgetlens_lsp.stdio): the"
                             " ledger's plain version of that trick (docs/performance.md)")
    args = parser.parse_args()
    global LOGGED_SERVE
    if args.pygls_stdin:
        LOGGED_SERVE = PYGLS_STDIN + LOGGED_SERVE
    if args.default_switch_interval:
        LOGGED_SERVE = ("import budgetlens_lsp.session as _session\n"
                        "_session.SWITCH_INTERVAL_S = 0.005  # Python's default\n"
                        + LOGGED_SERVE)
    rows = [r.strip() for r in args.rows.split(",") if r.strip()]
    unknown = sorted(set(rows) - set(ROWS))
    if unknown or not rows:
        parser.error(f"--rows: unknown {', '.join(unknown) or '(none given)'}; choose from"
                     f" {', '.join(ROWS)}")
    args.rows = frozenset(rows)
    quick = args.quick
    for name, full, small in (("edits", 60, 5), ("starts", 5, 1), ("keystrokes", 60, 10),
                              ("rss_edits", 1000, 20)):
        if getattr(args, name) is None:
            setattr(args, name, small if quick else full)
    args.big_steps, args.pipelines, args.shared_by = (100, 100, 20) if quick else \
        (500, 1000, 200)
    out = asyncio.run(run(args))
    print_report(out)
    if args.json:
        args.json.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
