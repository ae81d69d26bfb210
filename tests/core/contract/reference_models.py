"""The pydantic models of config.json and pipeline files and the lenient validation as they
were before ``contract/shapes.py`` (frozen copies of contract/config.py, contract/pipeline.py
and contract/validation.py): the reference the shapes' light read and the models they make
are compared with (``test_shapes.py``). Not product code; never changed with it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

DEFAULT_PROMPTS_DIR = "prompts"
DEFAULT_FORMAT_OVERHEAD_TOKENS = 32
DEFAULT_SAFETY_MARGIN_TOKENS = 128

PositiveInt = Annotated[int, Field(strict=True, gt=0)]
NonNegativeInt = Annotated[int, Field(strict=True, ge=0)]
StrictStr = Annotated[str, Field(strict=True)]
StrictBool = Annotated[bool, Field(strict=True)]


class ServingLimits(BaseModel):
    """``serving``: the limits of the server that runs the model (they may be lower than
    the model's own window). Unknown keys are kept."""

    model_config = ConfigDict(extra="allow")

    max_model_len: PositiveInt | None = Field(
        None, description="vLLM --max-model-len: the longest prompt + output the server"
                          " accepts.")
    num_ctx: PositiveInt | None = Field(
        None, description="Ollama num_ctx: the context the server allocates (Ollama's"
                          " default is small and silently truncates longer prompts).")


class PromptMapping(BaseModel):
    """One entry of ``prompt_mappings``: the files a glob matches are read as prompt files,
    each value found at its dotted path (``model.max_tokens``). Unknown keys are kept."""

    model_config = ConfigDict(extra="allow")

    glob: StrictStr | None = Field(
        None, description="The files this mapping reads: a glob relative to config.json's"
                          " folder (agents/*.yaml).")
    model: StrictStr | None = Field(
        None, description="Dotted path of the model's name in each file (model.name).")
    output: StrictStr | None = Field(
        None, description="Dotted path of the output limit in each file (model.max_tokens).")
    system_text: StrictStr | None = Field(
        None, description="Dotted path of the system prompt's text in each file.")
    system_file: StrictStr | None = Field(
        None, description="Dotted path of the system prompt's file name in each file"
                          " (relative to the file's folder).")
    template: StrictStr | None = Field(
        None, description="Dotted path of the user message template (mustache, variables"
                          " counted empty).")


class WorkspaceConfig(BaseModel):
    """The workspace's ``config.json``. Unknown keys are kept."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, protected_namespaces=())

    model: StrictStr | None = Field(
        None, description="The model's name in the bundled registry (gpt-4o,"
                          " llama-3.1-8b-instruct): its window, output ceiling and tokenizer"
                          " are used where config.json sets none.")
    model_context_window: PositiveInt | None = Field(
        None, description="The model's context window in tokens: prompt and generation"
                          " together (required unless model names a registry model).")
    model_max_tokens: PositiveInt | None = Field(
        None, description="Default output limit of a call_model step that sets neither"
                          " max_output_tokens nor max_tokens.")
    model_max_output_tokens: PositiveInt | None = Field(
        None, description="The model's hard ceiling on output tokens; a step asking for more"
                          " is an error.")
    prompts_dir: StrictStr = Field(
        DEFAULT_PROMPTS_DIR, description="Folder of the system prompt files"
                                         " (<prompts_dir>/<prompt_key>.txt), relative to"
                                         " config.json.")
    development: StrictBool | None = Field(
        None, validation_alias=AliasChoices("development", "developement"),
        description="Development mode: true gives the fail_fast policy, false auto_clamp."
                    " The misspelling 'developement' is accepted too.")
    format_overhead_tokens: NonNegativeInt = Field(
        DEFAULT_FORMAT_OVERHEAD_TOKENS,
        description="Tokens added to every step's fixed cost for role markers, [INST]"
                    " wrappers and separators (conservative default 32).")
    tokenizer: StrictStr | None = Field(
        None, description="cl100k_base, o200k_base, a model name (gpt-4o) or the path of a"
                          " local Hugging Face tokenizer.json (default cl100k_base).")
    min_context_tokens: NonNegativeInt | None = Field(
        None, description="Workspace default of settings.min_context_tokens: the lowest"
                          " max_context_tokens the clamp may set (a pipeline's own setting"
                          " wins; default: half of max_context_tokens).")
    min_output_tokens: NonNegativeInt | None = Field(
        None, description="Workspace default of settings.min_output_tokens: the lowest output"
                          " limit the clamp may set for a step (a pipeline's own setting wins;"
                          " default: half of the step's own limit).")
    serving: ServingLimits | None = Field(
        None, description="Limits of the server running the model (vLLM max_model_len,"
                          " Ollama num_ctx): the window is the smaller of the model's and"
                          " the server's.")
    targets: list[StrictStr] | None = Field(
        None, description="Registry models every step is also checked against (the"
                          " target matrix of budgetlens check --target).")
    prompt_mappings: list[PromptMapping] | None = Field(
        None, description="Simple YAML or JSON agent files checked as prompt files: each"
                          " entry a glob and the dotted paths of model, output, system_text"
                          " or system_file, and template (docs/prompt-formats.md).")


class UserParts(BaseModel):
    """The user message of a step."""

    model_config = ConfigDict(extra="allow")

    template: StrictStr | None = Field(
        None, description="User message template; placeholders are {identifier}, '{{' and"
                          " '}}' are literal braces.")


class Step(BaseModel):
    """One step of a pipeline. Only ``type: call_model`` steps have a token budget."""

    model_config = ConfigDict(extra="allow")

    id: StrictStr | None = Field(None, description="The step's name (preferred).")
    name: StrictStr | None = Field(None, description="The step's name when it has no id.")
    type: StrictStr | None = Field(None, description="Step type; 'call_model' calls the model.")
    prompt_key: StrictStr | None = Field(
        None, description="System prompt file: <prompts_dir>/<prompt_key>.txt.")
    user_parts: UserParts | None = Field(None, description="The user message of the step.")
    max_output_tokens: PositiveInt | None = Field(
        None, description="Output limit of the step (wins over max_tokens).")
    max_tokens: PositiveInt | None = Field(
        None, description="Output limit of the step when max_output_tokens is not set.")
    use_history: StrictBool | None = Field(
        None, description="Put the conversation history (up to max_history_tokens) in the"
                          " prompt.")


class Settings(BaseModel):
    """Budget settings of a pipeline; merged key by key along the extends chain."""

    model_config = ConfigDict(extra="allow")

    max_context_tokens: PositiveInt | None = Field(
        None, description="Token limit of the retrieved context of every call_model step"
                          " (required, here or in a parent).")
    max_history_tokens: NonNegativeInt | None = Field(
        None, description="Token limit of the history of a use_history step.")
    budget_safety_margin_tokens: NonNegativeInt | None = Field(
        None, description=f"Tokens kept free in every step (default"
                          f" {DEFAULT_SAFETY_MARGIN_TOKENS}).")
    min_context_tokens: NonNegativeInt | None = Field(
        None, description="Lowest max_context_tokens the clamp may set (default: half of"
                          " max_context_tokens); below it, output limits are lowered.")
    min_output_tokens: NonNegativeInt | None = Field(
        None, description="Lowest output limit the clamp may set for a step (default: half of"
                          " the step's own limit); a step that cannot fit above its floors is"
                          " an error.")


class Pipeline(BaseModel):
    """A pipeline file. Unknown top-level keys are kept."""

    model_config = ConfigDict(extra="allow")

    extends: StrictStr | None = Field(
        None, description="Parent pipeline file, relative to this one.")
    settings: Settings | None = Field(None, description="Budget settings.")
    steps: list[Step] | None = Field(
        None, description="The steps; when present they replace the parent's.")



M = TypeVar("M", bound=BaseModel)
Path_ = tuple[str | int, ...]


@dataclass(frozen=True)
class FieldError:
    path: Path_
    message: str
    kind: str  # pydantic's error type, e.g. "missing", "int_type", "greater_than"


def dotted(path: Path_) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_QUOTED_KINDS = {"int_type": ("an integer", r"[+-]?[0-9][0-9_]*"),
                 "bool_type": ("a boolean", r"(?i:true|false|yes|no|on|off)")}


def _quoted_scalar(kind: str, value: Any) -> str | None:
    """The message for a number or boolean written as a string (``"512"``), else ``None``."""
    if kind not in _QUOTED_KINDS or not isinstance(value, str):
        return None
    expected, pattern = _QUOTED_KINDS[kind]
    hint = " (remove the quotes)" if re.fullmatch(pattern, value.strip()) else ""
    return f"expected {expected}, got the string {_shown(value)}{hint}"


class _Copies:
    """The containers a lenient validation copied before dropping something from them: by
    the id of the caller's container (so one reached twice is copied once, as
    ``copy.deepcopy`` shared it) and by their own id."""

    def __init__(self, work: dict[str, Any]) -> None:
        self.of: dict[int, Any] = {}  # id of the caller's container -> its copy
        self.own: dict[int, Any] = {id(work): work}  # id -> a container of this validation

    def owned(self, node: Any) -> Any:
        """``node`` if it is a copy already, else its copy (made once)."""
        if id(node) in self.own:
            return node
        copy = self.of.get(id(node))
        if copy is None:
            copy = dict(node) if isinstance(node, dict) else list(node)
            self.of[id(node)] = self.own[id(copy)] = copy
        return copy


def _delete(work: dict[str, Any], path: Path_, copies: _Copies) -> bool:
    """Remove the deepest existing element of ``path`` from ``work``.

    ``work`` shares its containers with the caller's data: each container on the way is
    replaced by its copy (``copies``) before it is changed, so the caller's data is never
    modified.
    """
    parents: list[tuple[Any, str | int]] = []
    node: Any = work
    for part in path:
        if parents and isinstance(node, (dict, list)):  # it may be changed: use the copy
            node = copies.owned(node)
            container, last = parents[-1]
            container[last] = node
        in_dict = isinstance(node, dict) and isinstance(part, str) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if not (in_dict or in_list):
            break
        parents.append((node, part))
        node = node[part]
    if not parents:
        return False
    container, last = parents[-1]
    if isinstance(container, list):
        # keep the indices of later items: replace with an empty mapping
        container[last] = {}  # type: ignore[index]
    else:
        del container[last]
    return True


def validate_lenient(model: type[M], data: dict[str, Any],
                     *, rounds: int = 5) -> tuple[M | None, list[FieldError]]:
    """Validate ``data``; wrong values are reported and dropped until the rest validates.

    ``data`` is not modified: what is dropped is dropped from copies of the containers on
    its path only (see ``_delete``), the rest is validated as it is.
    """
    errors: list[FieldError] = []
    work = dict(data)
    copies = _Copies(work)
    for _ in range(rounds):
        try:
            return model.model_validate(work), errors
        except ValidationError as exc:
            progressed = False
            for err in exc.errors(include_url=False):
                loc = tuple(p for p in err["loc"] if isinstance(p, (str, int)))
                msg = _quoted_scalar(str(err["type"]), err.get("input")) or str(err["msg"])
                msg = msg[:1].lower() + msg[1:]
                if err["type"] != "missing" and not msg.startswith("expected "):
                    msg = f"{msg} (got {_shown(err.get('input'))})"
                errors.append(FieldError(loc, f"{dotted(loc)}: {msg}", str(err["type"])))
                if err["type"] != "missing" and _delete(work, loc, copies):
                    progressed = True
            if not progressed:
                return None, errors
    return None, errors
