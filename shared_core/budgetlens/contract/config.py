"""``config.json``: the model's limits and the workspace's settings.

The config of a pipeline is the nearest ``config.json`` at or above the pipeline's folder
(up to the workspace root, when one is known); a caller may name another one explicitly.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar

from budgetlens import codes
from budgetlens.contract.near_miss import check_mapping, model_keys, near_miss_diagnostic, suggest
from budgetlens.contract.shapes import Shape, count, flag, nested, nested_list, text, texts
from budgetlens.contract.validation import validate_lenient
from budgetlens.files import FileMissing, FileSource, SourceError, within
from budgetlens.source import Diagnostic, LineIndex, Location, Range, Severity
from budgetlens.yamldoc.parse import YamlDocument, parse_yaml

CONFIG_NAME = "config.json"
DEFAULT_PROMPTS_DIR = "prompts"
#: Tokens added to every step's fixed cost for the chat format: role markers and separators
#: of ChatML (about 4 per message and 3 to prime the reply) or the ``[INST]``/``<<SYS>>``
#: wrappers of Llama-style templates (about 15). 32 covers a system and a user message in
#: either style with room to spare; set ``format_overhead_tokens`` to your own measurement.
DEFAULT_FORMAT_OVERHEAD_TOKENS = 32


# The shapes below are read without pydantic when valid; their pydantic models (errors, the
# JSON Schema) are made from the same declarations on first use (contract/shapes.py).
class ServingLimits(Shape):
    """``serving``: the limits of the server that runs the model (they may be lower than
    the model's own window). Unknown keys are kept."""

    max_model_len: int | None = count(
        "vLLM --max-model-len: the longest prompt + output the server accepts.", gt=0)
    num_ctx: int | None = count(
        "Ollama num_ctx: the context the server allocates (Ollama's default is small and"
        " silently truncates longer prompts).", gt=0)


class PromptMapping(Shape):
    """One entry of ``prompt_mappings``: the files a glob matches are read as prompt files,
    each value found at its dotted path (``model.max_tokens``). Unknown keys are kept."""

    glob: str | None = text(
        "The files this mapping reads: a glob relative to config.json's folder"
        " (agents/*.yaml).")
    model: str | None = text("Dotted path of the model's name in each file (model.name).")
    output: str | None = text(
        "Dotted path of the output limit in each file (model.max_tokens).")
    system_text: str | None = text("Dotted path of the system prompt's text in each file.")
    system_file: str | None = text(
        "Dotted path of the system prompt's file name in each file (relative to the file's"
        " folder).")
    template: str | None = text(
        "Dotted path of the user message template (mustache, variables counted empty).")


class WorkspaceConfig(Shape):
    """The workspace's ``config.json``. Unknown keys are kept."""

    PYDANTIC_CONFIG: ClassVar[dict[str, Any]] = {"populate_by_name": True,
                                                  "protected_namespaces": ()}

    model: str | None = text(
        "The model's name in the bundled registry (gpt-4o, llama-3.1-8b-instruct): its window,"
        " output ceiling and tokenizer are used where config.json sets none.")
    model_context_window: int | None = count(
        "The model's context window in tokens: prompt and generation together (required"
        " unless model names a registry model).", gt=0)
    model_max_tokens: int | None = count(
        "Default output limit of a call_model step that sets neither max_output_tokens nor"
        " max_tokens.", gt=0)
    model_max_output_tokens: int | None = count(
        "The model's hard ceiling on output tokens; a step asking for more is an error.", gt=0)
    prompts_dir: str = text(
        "Folder of the system prompt files (<prompts_dir>/<prompt_key>.txt), relative to"
        " config.json.", default=DEFAULT_PROMPTS_DIR)
    development: bool | None = flag(
        "Development mode: true gives the fail_fast policy, false auto_clamp. The misspelling"
        " 'developement' is accepted too.", aliases=("development", "developement"))
    format_overhead_tokens: int = count(
        "Tokens added to every step's fixed cost for role markers, [INST] wrappers and"
        " separators (conservative default 32).", ge=0, default=DEFAULT_FORMAT_OVERHEAD_TOKENS)
    tokenizer: str | None = text(
        "cl100k_base, o200k_base, a model name (gpt-4o) or the path of a local Hugging Face"
        " tokenizer.json (default cl100k_base).")
    min_context_tokens: int | None = count(
        "Workspace default of settings.min_context_tokens: the lowest max_context_tokens the"
        " clamp may set (a pipeline's own setting wins; default: half of"
        " max_context_tokens).", ge=0)
    min_output_tokens: int | None = count(
        "Workspace default of settings.min_output_tokens: the lowest output limit the clamp"
        " may set for a step (a pipeline's own setting wins; default: half of the step's own"
        " limit).", ge=0)
    serving: ServingLimits | None = nested(
        ServingLimits, "Limits of the server running the model (vLLM max_model_len, Ollama"
                       " num_ctx): the window is the smaller of the model's and the server's.")
    targets: list[str] | None = texts(
        "Registry models every step is also checked against (the target matrix of budgetlens"
        " check --target).")
    prompt_mappings: list[PromptMapping] | None = nested_list(
        PromptMapping, "Simple YAML or JSON agent files checked as prompt files: each entry"
                       " a glob and the dotted paths of model, output, system_text or"
                       " system_file, and template (docs/prompt-formats.md).")


@dataclass(frozen=True)
class LoadedConfig:
    """A config.json as read: its values (``None`` when unusable) and where each one is."""

    path: str
    config: WorkspaceConfig | None
    window_ok: bool
    value_ranges: dict[str, Range] = field(default_factory=dict)
    key_ranges: dict[str, Range] = field(default_factory=dict)
    diagnostics: tuple[Diagnostic, ...] = ()

    @cached_property
    def directory(self) -> str:
        """The folder of config.json (made once: a check reads it several times per
        pipeline)."""
        return os.path.dirname(self.path) or "."

    def location(self, key: str) -> Location:
        if key == "development" and key not in self.value_ranges:
            key = "developement"
        return Location(self.path, self.value_ranges.get(key, Range.at(0, 0)))


def _diag(path: str, rng: Range, code: str, message: str,
          severity: Severity = Severity.ERROR) -> Diagnostic:
    return Diagnostic(path, rng, severity, code, message)


#: A JSON string or number token (strings first, so digits inside them are skipped). A string
#: never fails once begun: an unterminated one runs to the end of the text, or to a backslash
#: before a line break (else the scan would restart at each of its escaped quotes and read on
#: to the end again from each: quadratic in a broken config.json).
_JSON_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z|\\(?=\n))'
                         r'|-?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?')


def _unreadable_integers(text: str) -> list[tuple[int, int]]:
    """(start, end) of every integer literal Python cannot read (more digits than the
    interpreter's int-string limit, 4300 by default)."""
    out: list[tuple[int, int]] = []
    for m in _JSON_TOKEN.finditer(text):
        token = m.group()
        if token[0] == '"' or any(c in token for c in ".eE"):
            continue
        try:
            int(token)
        except ValueError:
            out.append(m.span())
    return out


def _digits(token: str) -> str:
    return f"a number of {len(token.lstrip('-')):,} digits"


def _unusable(path: str, message: str, rng: Range | None = None) -> LoadedConfig:
    """A config.json that cannot be used at all, with the reason as its one diagnostic."""
    return LoadedConfig(path, None, False, diagnostics=(_diag(
        path, rng or Range.at(0, 0), codes.CONFIG_INVALID, message),))


def unreadable_config(path: str, exc: SourceError) -> LoadedConfig:
    """A config.json that could not be read (it exists)."""
    return _unusable(path, f"config.json cannot be used: {exc}")


def _read_json(text: str) -> tuple[Any, str, list[tuple[int, int]]]:
    """The JSON data of ``text``, the text as read, and every integer too long for Python
    to read (4,300+ digits): the rest is read with a null of the same length in its place,
    and the value is reported where it is. Raises as ``json.loads``."""
    try:
        return json.loads(text), text, []
    except ValueError as exc:
        oversized = [] if isinstance(exc, json.JSONDecodeError) else _unreadable_integers(text)
        if not oversized:
            raise
    readable = text
    for start, end in oversized:
        readable = readable[:start] + "null".ljust(end - start) + readable[end:]
    return json.loads(readable), readable, oversized


_Parsed = tuple[dict[str, Any], str, list[tuple[int, int]]]


def _parse(path: str, text: str) -> _Parsed | LoadedConfig:
    """``_read_json`` of a config.json's text; a ``LoadedConfig`` saying why when it is not
    a JSON object."""
    try:
        data, readable, oversized = _read_json(text)
    except json.JSONDecodeError as exc:
        rng = Range.at(max(exc.lineno - 1, 0), max(exc.colno - 1, 0))
        return _unusable(path, f"config.json is not valid JSON: {exc.msg}", rng)
    except RecursionError:
        return _unusable(path, "config.json nested too deeply")
    except ValueError as exc:  # not expected: an unreadable value the scan did not find
        return _unusable(path, "config.json cannot be read:"
                               f" {str(exc).splitlines()[0] if str(exc) else exc!r}")
    if not isinstance(data, dict):
        return _unusable(path, f"config.json must hold a JSON object, not {type(data).__name__}")
    return data, readable, oversized


def _oversized_diagnostics(path: str, text: str, oversized: list[tuple[int, int]],
                           value_ranges: dict[str, Range], work: dict[str, Any]
                           ) -> tuple[list[Diagnostic], bool]:
    """Diagnostics for the integers too long to read (each dropped from ``work``), and
    whether model_context_window is still usable."""
    diagnostics: list[Diagnostic] = []
    window_ok = True
    lines = LineIndex(text)
    for start, end in oversized:
        rng = lines.range(start, end)
        key = next((k for k, r in value_ranges.items() if _inside(rng, r)), "")
        what = _digits(text[start:end])
        if key == "model_context_window":
            window_ok = False
            diagnostics.append(_diag(path, rng, codes.WINDOW_INVALID,
                                     f"model_context_window must be an integer > 0, got"
                                     f" {what}: too long to read"))
        else:
            label = f"config.json {key}: " if key else "config.json: "
            diagnostics.append(_diag(path, rng, codes.CONFIG_VALUE_INVALID,
                                     f"{label}{what} is too long to read; the value is"
                                     " ignored"))
        work.pop(key, None)
    return diagnostics, window_ok


def _window_problem(path: str, work: dict[str, Any], where: Range) -> Diagnostic | None:
    """Why model_context_window (readable) cannot be used; ``None`` when it can (or when
    it is not set and ``model`` names the model, whose window the registry gives)."""
    if "model_context_window" not in work and isinstance(work.get("model"), str):
        return None
    if "model_context_window" not in work:
        return _diag(path, Range.at(0, 0), codes.WINDOW_INVALID,
                     "config.json has no model_context_window (an integer > 0,"
                     " the model's context window in tokens)")
    window = work["model_context_window"]
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        return _diag(path, where, codes.WINDOW_INVALID,
                     f"model_context_window must be an integer > 0, got {window!r}")
    return None


def _ranges(doc: YamlDocument | None) -> tuple[dict[str, Range], dict[str, Range]]:
    """Where each value (and top-level key) of config.json is: ``model``,
    ``serving.num_ctx``, ``targets.0``, ``serving.<model>.num_ctx``."""
    value_ranges: dict[str, Range] = {}
    key_ranges: dict[str, Range] = {}
    if doc is None:
        return value_ranges, key_ranges
    for pth, span in doc.spans.items():
        if len(pth) == 1 and isinstance(pth[0], str):
            value_ranges[pth[0]] = span.value
            key_ranges[pth[0]] = span.key or span.value
        elif len(pth) == 2 and pth[0] in ("serving", "targets"):
            value_ranges[f"{pth[0]}.{pth[1]}"] = span.value  # serving.num_ctx, targets.0
        elif len(pth) == 3 and pth[0] == "serving":  # a model's own serving block
            value_ranges[f"serving.{pth[1]}.{pth[2]}"] = span.value
    return value_ranges, key_ranges


def load_config(path: str, text: str) -> LoadedConfig:
    """Parse and validate the text of a config.json."""
    parsed = _parse(path, text)
    if isinstance(parsed, LoadedConfig):
        return parsed
    data, readable, oversized = parsed
    doc, _ = parse_yaml(readable)  # JSON is YAML: positions of the top-level keys, best effort
    value_ranges, key_ranges = _ranges(doc)
    work = dict(data)
    diagnostics, window_ok = _oversized_diagnostics(path, text, oversized, value_ranges, work)
    # a number too long to read is reported above at the value
    problem = _window_problem(path, work, value_ranges.get("model_context_window",
                                                           Range.at(0, 0))) if window_ok else None
    if problem is not None:
        window_ok = False
        diagnostics.append(problem)
    if not window_ok:
        work["model_context_window"] = 1
    model, errors = validate_lenient(WorkspaceConfig, work)
    for err in errors:
        key = str(err.path[0]) if err.path else ""
        if key == "development" and key not in value_ranges:
            key = "developement"
        diagnostics.append(_diag(path, value_ranges.get(key, Range.at(0, 0)),
                                 codes.CONFIG_VALUE_INVALID, f"config.json {err.message}"))
    diagnostics.extend(_near_miss_keys(path, doc, data))
    diagnostics.extend(_model_serving_values(path, data, value_ranges))
    diagnostics.extend(_mapping_entries(path, data, doc))
    return LoadedConfig(path, model, window_ok, value_ranges, key_ranges, tuple(diagnostics))


#: Keys of config.json read by the check but not by the WorkspaceConfig shape: the gateway
#: and the model variant (contract/limits.py).
CONFIG_EXTRA_KEYS = ("gateway", "variant")


_DEVELOPMENT_KEYS = ("development", "developement")
_NO_DEVELOPMENT = (" Until then development mode is not set: the policy is auto_clamp unless"
                   " PIPELINE_LIMITS_POLICY or APP_DEVELOPMENT says otherwise")


#: The keys of config.json that set a budget term (the window, an output limit, the counts,
#: the clamp's floors): a near miss of one is an error (BL008). ``development`` chooses the
#: policy and ``targets`` the extra models checked: a near miss of those is a warning.
BUDGET_KEYS = frozenset({
    "model", "model_context_window", "model_max_tokens", "model_max_output_tokens",
    "prompts_dir", "format_overhead_tokens", "tokenizer", "min_context_tokens",
    "min_output_tokens", "serving", "prompt_mappings", *CONFIG_EXTRA_KEYS})


def _near_miss_keys(path: str, doc: YamlDocument | None,
                    data: dict[str, Any]) -> list[Diagnostic]:
    """BL008 for each key of config.json and of its ``serving`` that misspells a key read
    there (others are allowed)."""
    known = model_keys(WorkspaceConfig, *CONFIG_EXTRA_KEYS)
    extra = ({} if any(k in data for k in _DEVELOPMENT_KEYS)
             else dict.fromkeys(_DEVELOPMENT_KEYS, _NO_DEVELOPMENT))
    serving_keys = model_keys(ServingLimits)
    if doc is not None and isinstance(doc.value, dict):
        mapping_keys = model_keys(PromptMapping)
        mappings = data.get("prompt_mappings")
        n_mappings = len(mappings) if isinstance(mappings, list) else 0
        return (check_mapping(path, doc, (), known, extra=extra, budget=BUDGET_KEYS)
                + [d for i in range(n_mappings) for d in check_mapping(
                    path, doc, ("prompt_mappings", i), mapping_keys, budget=mapping_keys)]
                + check_mapping(path, doc, ("serving",), serving_keys, budget=serving_keys)
                + [d for name in _model_blocks(data) for d in check_mapping(
                    path, doc, ("serving", name), serving_keys, budget=serving_keys)])
    out = []  # JSON that YAML cannot read (e.g. a "\/" escape): no positions
    serving = data.get("serving")
    for keys, mapping, budget in ((known, data, BUDGET_KEYS),
                                  (serving_keys, serving if isinstance(serving, dict) else {},
                                   frozenset(serving_keys))):
        for key in mapping:
            suggestion = suggest(key, keys)
            if suggestion is not None:
                out.append(near_miss_diagnostic(
                    path, key, suggestion, None, extra=extra.get(suggestion, ""),
                    budget=suggestion in budget and suggestion not in mapping))
    return out
def _model_blocks(data: dict[str, Any]) -> list[str]:
    """The model names of config.json's ``serving`` that hold a block of their own
    (``serving: {"ollama/llama3.1": {"num_ctx": 8192}}``)."""
    serving = data.get("serving")
    if not isinstance(serving, dict):
        return []
    return [key for key, value in serving.items() if isinstance(value, dict)]


def _model_serving_values(path: str, data: dict[str, Any],
                          value_ranges: dict[str, Range]) -> list[Diagnostic]:
    """BL013 for a limit of a model's own serving block that is not an integer > 0."""
    out: list[Diagnostic] = []
    serving = data.get("serving")
    for name in _model_blocks(data):
        assert isinstance(serving, dict)
        for key in ("max_model_len", "num_ctx"):
            value = serving[name].get(key)
            if value is not None and not (type(value) is int and value > 0):
                out.append(_diag(path, value_ranges.get(f"serving.{name}.{key}",
                                                        Range.at(0, 0)),
                                 codes.CONFIG_VALUE_INVALID,
                                 f"config.json serving[{name!r}].{key} must be an integer"
                                 f" > 0, got {value!r}; the value is ignored"))
    return out


#: The keys a ``prompt_mappings`` entry needs: the files, and where their output limit is.
MAPPING_REQUIRED = ("glob", "output")


def _mapping_entries(path: str, data: dict[str, Any],
                     doc: YamlDocument | None) -> list[Diagnostic]:
    """BL013 for a ``prompt_mappings`` entry without a key it needs (the entry is not
    used: ``discovery.mapping_in``)."""
    mappings = data.get("prompt_mappings")
    if not isinstance(mappings, list):
        return []
    out: list[Diagnostic] = []
    for i, entry in enumerate(mappings):
        if not isinstance(entry, dict):
            continue  # a wrong type: the shape's check reports it
        missing = [k for k in MAPPING_REQUIRED if not isinstance(entry.get(k), str)
                   or not entry[k]]
        if missing:
            span = doc.spans.get(("prompt_mappings", i)) if doc is not None else None
            out.append(_diag(path, span.value if span else Range.at(0, 0),
                             codes.CONFIG_VALUE_INVALID,
                             f"config.json prompt_mappings[{i}] needs {' and '.join(missing)}"
                             " (a string); the entry is not used"))
    return out


def _inside(inner: Range, outer: Range) -> bool:
    """``inner`` starts in ``outer`` (a stand-in ``null`` spans 4 characters of the number)."""
    return outer.start == inner.start or outer.start <= inner.start < outer.end


def read_config(path: str, files: FileSource) -> LoadedConfig:
    """Read and load ``path``; an unreadable file gives a config with a diagnostic."""
    try:
        text = files.read_text(Path(path))
    except SourceError as exc:
        return unreadable_config(path, exc)
    return load_config(path, text)


def find_config(start_dir: str, files: FileSource, *, stop_at: str | None = None,
                load: Callable[[str], LoadedConfig | None] | None = None,
                ) -> tuple[LoadedConfig | None, list[str]]:
    """The nearest config.json at or above ``start_dir``, and every path probed for one.

    The search stops at ``stop_at`` (the workspace root) when given, else at the filesystem
    root. Paths keep the form they were given in (relative stays relative). ``load`` reads a
    candidate (``None`` when it does not exist); by default ``files`` is read directly.
    """
    loader = load or (lambda path: read_config_if_present(path, files))
    probed: list[str] = []
    current = os.path.normpath(start_dir or ".")
    stop = os.path.abspath(stop_at) if stop_at is not None else None
    for _ in range(256):
        candidate = os.path.normpath(os.path.join(current, CONFIG_NAME))
        probed.append(candidate)
        loaded = loader(candidate)
        if loaded is not None:
            return loaded, probed
        absolute = os.path.abspath(current)
        if (stop is not None and absolute == stop) or os.path.dirname(absolute) == absolute:
            break
        if stop is not None and not within(absolute, stop):  # stop may be "/"
            break
        current = os.path.normpath(os.path.join(current, os.pardir))
    return None, probed


def read_config_if_present(path: str, files: FileSource) -> LoadedConfig | None:
    """Read and load ``path``; ``None`` when there is no such file."""
    try:
        text = files.read_text(Path(path))
    except FileMissing:
        return None
    except SourceError as exc:
        return unreadable_config(path, exc)
    return load_config(path, text)

