"""The MCP server of ``budgetlens mcp``: budgetlens's tools for coding agents, over stdio.

Built on the official MCP Python SDK (``mcp``, the ``budgetlens[mcp]`` extra). Each tool is a
thin adapter over what the command line already does, never a second implementation:

- ``check``: ``budgetlens check PATH --format json --no-cache`` (its JSON document);
- ``explain_diagnostic``: ``budgetlens rule CODE`` (``budgetlens.rules``);
- ``hierarchy_context``: the core's ``get_contexts`` of a cut JSON text;
- ``clamp_plan``: ``budgetlens clamp PATH --diff`` (shown, never written);
- ``fit_request``: the core's ``fit_request``, registered only when the installed
  ``budgetlens`` exports it.

The process works in the server's root (``--root``, default the current folder): every path
argument must resolve (real path, symlinks followed) inside it, else the call is a tool
error. Nothing is written: no result cache, no clamp. A bad argument is a tool error
(``isError: true``) with one clear line; an internal failure is a tool error with the same
line the CLI prints (``budgetlens: internal error: ...``), its traceback on standard error.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import sys
import threading
import traceback
from collections.abc import Callable
from typing import Annotated, Any, Literal, TypeVar

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import Field

import budgetlens
from budgetlens import __version__
from budgetlens.continuation.contexts import DEFAULT_BUDGET, DEFAULT_MARKER, DEFAULT_OVERLAP_CHARS
from budgetlens.serialize import to_jsonable
from budgetlens_cli.main import UsageError, build_parser, internal_error_line
from budgetlens_cli.rule_cmd import find_rule

F = TypeVar("F", bound=Callable[..., Any])

#: Every tool only reads: clients may call them without asking.
READ_ONLY = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True,
                            open_world_hint=False)
#: One CLI command at a time: each runs with standard output and error captured.
_CLI_LOCK = threading.Lock()

PathArg = Annotated[str, Field(
    description="A pipeline file or a workspace folder, relative to the server's root (or"
                " absolute); it must resolve inside the root. Default: the root itself.")]


class Root:
    """The server's root folder (a real path) and the check that keeps paths inside it."""

    def __init__(self, folder: str) -> None:
        self.folder = os.path.realpath(folder)

    def inside(self, path: str) -> str:
        """``path`` as the CLI is given it (relative to the root, the process's current
        folder); ToolError when it resolves outside the root."""
        if not path or "\0" in path:
            raise ToolError(f"path {path!r}: not a usable path")
        real = os.path.realpath(os.path.join(self.folder, path))
        if real != self.folder and not real.startswith(self.folder + os.sep):
            raise ToolError(f"path {path!r} resolves outside the server's root"
                            f" {self.folder}; only files inside it can be read")
        return path if os.path.isabs(path) else os.path.normpath(path)


def shown(fn: F) -> F:
    """A tool whose internal failures are shown, never swallowed: a ToolError passes as it is;
    any other exception becomes a tool error with the CLI's one line, and its traceback goes
    to standard error (the client's log)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ToolError:
            raise
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            raise ToolError(internal_error_line(exc)) from exc

    return wrapper  # type: ignore[return-value]


def run_cli(argv: list[str]) -> tuple[int, str, str]:
    """Run ``budgetlens ARGV`` in this process: its exit status, standard output and standard
    error. Bad usage (exit status 2) is a ToolError with the CLI's message."""
    out, err = io.StringIO(), io.StringIO()
    with _CLI_LOCK, contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        parser = build_parser(only=argv[0])
        try:
            args = parser.parse_args(argv)
        except SystemExit:
            usage = err.getvalue().strip().splitlines()
            raise ToolError(usage[-1] if usage else f"bad arguments: {argv}") from None
        try:
            code = int(args.run(args))
        except UsageError as exc:
            raise ToolError(str(exc)) from None
    return code, out.getvalue(), err.getvalue()


def result(text: str, data: dict[str, Any]) -> CallToolResult:
    """A tool's answer: ``text`` for the model to read, ``data`` as structured content."""
    return CallToolResult(content=[TextContent(type="text", text=text)],
                          structured_content=data)


def build_server(root: Root) -> MCPServer:
    """The server with its tools (``fit_request`` only when ``budgetlens`` exports it)."""
    server: MCPServer = MCPServer(
        name="budgetlens", version=__version__,
        instructions="Token budgets of LLM pipelines: check a workspace or a pipeline file,"
                     " explain a diagnostic code, show the clamp plan as a diff, read a cut"
                     " JSON reply, fit a chat request to a model. Nothing is ever written.")
    for tool in (check_tool(root), explain_tool(), hierarchy_tool(), clamp_tool(root)):
        server.add_tool(shown(tool), annotations=READ_ONLY)
    if hasattr(budgetlens, "fit_request"):
        server.add_tool(shown(fit_tool()), annotations=READ_ONLY)
    return server


def check_tool(root: Root) -> Callable[..., CallToolResult]:
    def check(path: PathArg = ".",
              policy: Annotated[Literal["fail_fast", "auto_clamp"] | None, Field(
                  description="Override the policy (default: the workspace's: development"
                              " true in config.json is fail_fast)")] = None) -> CallToolResult:
        """Check pipelines against the token budget contract, as `budgetlens check --format
        json` does: every diagnostic (code, severity, message, range, where each budget term
        comes from) and every call_model step's budget (fixed, history, context, output,
        margin, total, window, fits). `path` is a pipeline file or a workspace folder
        (searched for pipelines/*.yaml). exit_status is 1 when there is an error-severity
        diagnostic, else 0. Explain a code with explain_diagnostic; show the fix of a budget
        violation (BL050) with clamp_plan."""
        argv = ["check", root.inside(path), "--format", "json", "--no-cache", "--jobs", "1"]
        if policy is not None:
            argv += ["--policy", policy]
        code, out, err = run_cli(argv)
        data = json.loads(out)
        data["exit_status"] = code
        if err.strip():
            data["stderr"] = err
        return result(out, data)

    return check


def explain_tool() -> Callable[..., CallToolResult]:
    def explain_diagnostic(code: Annotated[str, Field(
            description="A budgetlens diagnostic code, such as BL050")]) -> CallToolResult:
        """Explain a budgetlens diagnostic code (BLxxx), as `budgetlens rule CODE` does: its
        severity, its title, what it means and how to fix it (the code's section of
        docs/diagnostics.md). An unknown code is an error naming the codes it may be."""
        try:
            rule = find_rule(code)
        except UsageError as exc:
            raise ToolError(str(exc)) from None
        return result(rule.to_text(), {"code": rule.code, "severity": rule.severity,
                                       "title": rule.title, "text": rule.text})

    return explain_diagnostic


def hierarchy_tool() -> Callable[..., CallToolResult]:
    def hierarchy_context(
            text: Annotated[str, Field(
                description="The JSON text, possibly cut off (e.g. a model reply that ran out"
                            " of output tokens)")],
            budget: Annotated[int, Field(
                ge=0, description="Characters of values shown in full in the hierarchy"
                                  f" context (default {DEFAULT_BUDGET})")] = DEFAULT_BUDGET,
            marker: Annotated[str, Field(
                min_length=1, description="Text marking the cut")] = DEFAULT_MARKER,
            overlap_chars: Annotated[int, Field(
                ge=0, description="Length of the overlap context")] = DEFAULT_OVERLAP_CHARS,
    ) -> CallToolResult:
        """Find where a JSON text was cut off and build what a continuation prompt needs, as
        `budgetlens contexts` does: the budgeted hierarchy context with the cut marked
        (hierarchy_context_for_prompt), the cut position and path (cut, description), the
        closed JSON that parses (complete_part), the cut text (hierarchy_context) and the
        overlap a continuation must repeat. json_parsing_success is false when the text is
        not JSON nor a cut-off prefix of JSON (error says why)."""
        ctx = budgetlens.get_contexts(text, budget=budget, marker=marker,
                                      overlap_chars=overlap_chars)
        data: dict[str, Any] = to_jsonable(ctx)
        shown_text = f"{ctx.description}\n\n{ctx.hierarchy_context_for_prompt}".rstrip() + "\n"
        return result(shown_text, data)

    return hierarchy_context


def clamp_tool(root: Root) -> Callable[..., CallToolResult]:
    def clamp_plan(path: PathArg = ".",
                   edit_parent: Annotated[bool, Field(
                       description="Plan an inherited value's change in the file that sets it"
                                   " rather than in the child")] = False) -> CallToolResult:
        """Show the clamp plan of pipelines as a unified diff, as `budgetlens clamp --diff`
        does; nothing is written (apply it yourself, or run `budgetlens clamp --write`).
        The plan lowers max_context_tokens, then per-step output limits, until every
        call_model step fits its window; only numbers change. changes_pending tells whether
        the diff is not empty; exit_status is 1 when changes are pending or errors remain
        after the plan (notes say what it cannot fix), as `budgetlens clamp --diff`."""
        argv = ["clamp", root.inside(path), "--diff"]
        if edit_parent:
            argv.append("--edit-parent")
        code, out, err = run_cli(argv)
        data = {"diff": out, "changes_pending": bool(out), "exit_status": code,
                "notes": err.splitlines()}
        text = out if out else "no change: every step already fits (or cannot be clamped)\n"
        return result(text + (f"\n{err}" if err else ""), data)

    return clamp_plan


def fit_tool() -> Callable[..., CallToolResult]:
    def fit_request(
            model: Annotated[str, Field(description="A model name of the registry (gpt-4o,"
                                                    " claude-sonnet-4, llama3.1:8b, ...)")],
            messages: Annotated[list[dict[str, Any]], Field(
                description="The chat messages ({role, content}), oldest first")],
            max_tokens: Annotated[int | None, Field(
                ge=1, description="The output limit you would send (clamped to what fits)")
            ] = None,
            tools: Annotated[list[dict[str, Any]] | None, Field(
                description="Tool definitions sent with the request")] = None,
            response_format: Annotated[dict[str, Any] | None, Field(
                description="The response format (JSON schema) sent with the request")] = None,
            serving: Annotated[dict[str, int] | None, Field(
                description="The server's limit: {\"max_model_len\": N} (vLLM) or"
                            " {\"num_ctx\": N} (Ollama)")] = None,
            margin: Annotated[int | str | None, Field(
                description="Safety margin: tokens, or a rule such as \"2% + 128\"")] = None,
            window: Annotated[int | None, Field(
                ge=1, description="The window of a model the registry does not know")] = None,
            trim: Annotated[bool, Field(
                description="Drop the oldest history turns to fit (false: refuse)")] = True,
    ) -> CallToolResult:
        """Fit one concrete chat request to a model, as budgetlens.fit_request does: count it
        exactly (chat framing included), clamp the output limit, trim the oldest history
        turns (keeping system messages and the last user turn). Returns the messages to
        send, the output limit (output_tokens), input_tokens, the window, what was dropped
        and why (message, notes). fits is false, with over_by, when nothing makes it fit."""
        call: Any = budgetlens.fit_request
        try:
            fit = call(model, messages, tools=tools, response_format=response_format,
                       max_tokens=max_tokens, serving=serving, margin=margin, window=window,
                       trim=trim)
        except ValueError as exc:  # RequestDoesNotFit (a ValueError) carries its numbers
            fit = getattr(exc, "fit", None)
            if fit is None:  # an unknown model, a bad margin: the caller's to correct
                raise ToolError(str(exc)) from None
        data: dict[str, Any] = to_jsonable(fit)
        return result(str(data.get("message") or json.dumps(data, ensure_ascii=False)), data)

    return fit_request


def serve(root: str) -> None:
    """Serve the tools over stdio until the client closes the connection. The process works
    in ``root``: every relative path, and the CLI's output paths, are the root's."""
    folder = Root(root)
    os.chdir(folder.folder)
    build_server(folder).run("stdio")
