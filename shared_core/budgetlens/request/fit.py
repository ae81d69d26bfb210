"""Fitting one concrete chat request into its model: count it, clamp the output limit, trim
the history, or refuse.

``fit_request(model, messages, ...)`` counts the request (``count_request``: messages with
their chat framing, tool definitions, response schema; see ``request.framing``) and fits it:

1. the input (with the margin) must stay within the model's input limit and leave at least
   ``min_output`` tokens of the window (``serving`` may lower it) for the reply;
2. if it does not, history is trimmed: whole turns, oldest first (a turn is a user message
   and every message up to the next one: the assistant's replies, its tool calls and their
   results go together). System (and developer) messages and the last user turn, with
   whatever follows it, are always kept;
3. the output limit is then clamped to what the window leaves (and to the model's output
   ceiling): ``max_tokens`` when given, else the room left is reported;
4. when even the kept messages leave less than ``min_output`` tokens, ``RequestDoesNotFit``
   is raised; it carries the result (``.fit``) with the breakdown of every message.

Each clamp and each trim is logged as a warning on the ``budgetlens`` logger: what changed,
from what, to what, and why. ``check_request(step, messages, ...)`` does the same with the
model, tokenizer, output limit, history budget and window (serving included) of a step
``check_pipeline`` checked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from budgetlens.contract.frozen import quick_init
from budgetlens.contract.terms import reasoning_rule
from budgetlens.request.chat_template import template_count
from budgetlens.request.framing import (
    Message,
    MessageCost,
    bare_name,
    message_cost,
    schema_tokens,
    tools_tokens,
)
from budgetlens.request.limits import (
    Margin,
    RequestLimits,
    UnknownModel,
    parse_margin,
    request_limits,
)
from budgetlens.tokens.core import TokenCounter, get_tokenizer
from budgetlens.tokens.families import FAMILIES, available

if TYPE_CHECKING:  # annotations only
    from budgetlens.contract.results import PipelineReport, StepBudget

log = logging.getLogger("budgetlens")
_SYSTEM_ROLES = frozenset({"system", "developer"})


@quick_init
@dataclass(frozen=True)
class Breakdown:
    """Where a request's input tokens go. ``total`` = the messages + tools + schema +
    reply priming; ``framing`` is the part of it that is chat framing (in the messages and
    the reply priming)."""

    system: int
    """System and developer messages, their framing included."""
    messages: tuple[MessageCost, ...]
    tools: int
    schema: int
    reply: int
    """The tokens that prime the reply."""
    template: int = 0
    """Counted from the family's chat template (Llama 3, Qwen, DeepSeek, Mistral): the exact
    count minus the parts above (their per-message estimates); part of ``framing``."""

    @property
    def framing(self) -> int:
        return sum(m.framing for m in self.messages) + self.reply + self.template

    @property
    def total(self) -> int:
        return (sum(m.total for m in self.messages) + self.tools + self.schema + self.reply
                + self.template)

    def line(self) -> str:
        """``system 120 + 6 messages 4,210 + tools 88 + schema 40 + reply 3 = 4,461``."""
        rest = sum(m.total for m in self.messages if m.role not in _SYSTEM_ROLES)
        others = sum(1 for m in self.messages if m.role not in _SYSTEM_ROLES)
        parts = [f"system {self.system:,}",
                 f"{others} message{'' if others == 1 else 's'} {rest:,}"]
        parts += [f"tools {self.tools:,}"] if self.tools else []
        parts += [f"schema {self.schema:,}"] if self.schema else []
        parts += [f"template {self.template:+,}"] if self.template else []
        return " + ".join([*parts, f"reply {self.reply}"]) + f" = {self.total:,}"


@quick_init
@dataclass(frozen=True)
class RequestCount:
    """The input tokens of a request and where they go."""

    tokens: int
    breakdown: Breakdown
    approximate: bool
    """Not exact: the model's tokenizer or chat framing is approximated (≈)."""
    tokenizer: str
    rule: str
    notes: tuple[str, ...] = ()
    """What the count leaves out (``message 2: 1 non-text part not counted``)."""


@quick_init
@dataclass(frozen=True)
class RequestFit:
    """``fit_request``'s answer: what to send and why."""

    model: str
    messages: tuple[Message, ...]
    """The messages to send (history trimmed when it had to be)."""
    dropped: tuple[Message, ...]
    """History messages left out, oldest first."""
    input_tokens: int
    output_tokens: int
    """The output limit to send: ``max_tokens`` clamped, or the room left when none was given."""
    requested_output: int | None
    output_param: str
    """``max_tokens``, ``max_completion_tokens`` or ``max_output_tokens``."""
    window: int
    max_input: int | None
    margin: int
    margin_rule: str
    fits: bool
    over_by: int
    """Tokens over (0 when it fits)."""
    breakdown: Breakdown
    """Of the messages sent (``messages``)."""
    approximate: bool
    tokenizer: str
    message: str
    clamped: bool = False
    notes: tuple[str, ...] = ()
    """What the count leaves out (``RequestCount.notes``)."""
    reasoning: int = 0
    """The thinking budget asked for (``fit_request(reasoning=...)``)."""
    reasoning_rule: str = ""
    """Where the provider spends it (``contract.terms.reasoning_rule``): inside the output
    limit sent (OpenAI's ``max_completion_tokens``, Claude's ``max_tokens``) or beside it
    (Gemini's ``thinkingBudget``: then reserved from the window)."""

    @property
    def trimmed(self) -> bool:
        return bool(self.dropped)

    def request_kwargs(self) -> dict[str, Any]:
        """``{"messages": [...], <output_param>: output_tokens}``: the keyword arguments to
        send (the output limit only when one was asked for or clamped)."""
        out: dict[str, Any] = {"messages": list(self.messages)}
        if self.requested_output is not None:
            out[self.output_param] = self.output_tokens
        return out


class RequestDoesNotFit(ValueError):
    """No trim and no clamp makes the request fit; ``fit`` holds the numbers: its
    ``breakdown`` covers every message of the request as given, its ``input_tokens`` and
    ``over_by`` are those left once every history turn it may drop is dropped."""

    def __init__(self, fit: RequestFit) -> None:
        super().__init__(fit.message)
        self.fit = fit

    @property
    def breakdown(self) -> Breakdown:
        return self.fit.breakdown


class _Counting:
    """Counts texts with the caller's ``TokenCounter`` (its cache), else with the model's
    tokenizer; short texts (roles, names) memoised here for one request."""

    def __init__(self, count: Callable[[str], int], memo_all: bool = False) -> None:
        self.count = count
        self.short: dict[str, int] = {}
        self.limit = 1 << 62 if memo_all else 32
        """Longest text memoised: all of them when a chat template counts the contents again."""

    def __call__(self, text: str) -> int:
        if len(text) > self.limit:
            return self.count(text)
        n = self.short.get(text)
        if n is None:
            n = self.short[text] = self.count(text)
        return n


def _counter_for(limits: RequestLimits, counter: TokenCounter | None) -> Callable[[str], int]:
    """The caller's counter (its cache), else the tokenizer's plain encoding: no hashing,
    no cache (what is not asked for is not kept)."""
    if counter is not None:
        return counter.count
    encode = get_tokenizer(limits.tokenizer).encode

    def count(text: str) -> int:
        return len(encode(text))
    return count


def _count(limits: RequestLimits, messages: Sequence[Message], tools: Sequence[Any] | None,
           response_format: Any, counter: Callable[[str], int]) -> RequestCount:
    framing = limits.framing
    count = _Counting(counter, memo_all=limits.tokenizer in _TEMPLATE_RULE)
    costs = tuple(message_cost(i, m, framing, count) for i, m in enumerate(messages))
    tool_n, tools_exact = tools_tokens(tools or (), framing, count)
    schema_n, schema_exact = schema_tokens(response_format, framing, count)
    breakdown = Breakdown(sum(c.total for c in costs if c.role in _SYSTEM_ROLES), costs,
                          tool_n, schema_n, framing.reply)
    exact = (limits.tokenizer_exact and framing.exact and tools_exact and schema_exact
             and all(c.exact for c in costs))
    notes = tuple(f"message {c.index}: {c.uncounted} non-text part(s) not counted"
                  for c in costs if c.uncounted)
    rule = framing.rule
    template = template_of(limits.tokenizer, limits.model)
    templated = _templated(limits, template, messages, tools, count, costs)
    if templated is not None:  # the family's own chat template: exact but for a schema
        breakdown = replace(breakdown, template=templated - (breakdown.total - schema_n))
        exact, rule = schema_exact, _TEMPLATE_RULE.get(template, rule)
        if not _own_template(template, bare_name(limits.model)):
            exact, rule = False, f"≈ {rule}: {bare_name(limits.model)} has its own template"
    elif limits.tokenizer in _TEMPLATE_RULE and not available(limits.tokenizer):
        notes += (f"chat framing ≈: pip install 'budgetlens[{FAMILIES[limits.tokenizer].extra}]'"
                  " to count it from the model's chat template",)
    return RequestCount(breakdown.total, breakdown, not exact, limits.tokenizer, rule, notes)


_TEMPLATE_RULE = {
    "llama3": "Llama 3.1/3.2 chat template (Jinja, rendered as apply_chat_template)",
    "qwen2": "Qwen 2.5 chat template (Jinja, rendered as apply_chat_template)",
    "qwen3": "Qwen 3 chat template (Jinja, rendered as apply_chat_template)",
    "deepseek": "DeepSeek R1 chat template (Jinja, rendered as apply_chat_template)",
    "deepseek_v3": "DeepSeek V3 0324 chat template (Jinja, rendered as apply_chat_template)",
    "mistral_tekken": "mistral-common's request encoder (encode_chat_completion)",
}

#: The models whose own template is the one shipped (by bare name); the family's other models
#: (Llama 3.0, Qwen 3, QwQ, DeepSeek V3, ...) are counted with it too, marked ≈.
_TEMPLATE_MODELS: dict[str, tuple[str, ...]] = {
    "llama3": ("llama-3.1", "llama-3.2", "llama-3.3", "meta-llama-3.1", "llama3.1", "llama3.2",
               "llama3.3"),
    "qwen2": ("qwen2", "qwen-2"),
    "qwen3": ("qwen3-", "qwen-3-"),  # the April 2025 models; see _OTHER_QWEN3 for the rest
    "deepseek": ("deepseek-r1", "deepseek-reasoner"),
    "deepseek_v3": ("deepseek-v3-0324",),  # V3 (2412), V3.1, V3.2, deepseek-chat: their own
    # mistral-common's shipped Tekken file is instruct v3 (Nemo, Pixtral 12B); Small 3,
    # Devstral, Magistral, Ministral encode with v7 (a [SYSTEM_PROMPT] block): ≈
    "mistral_tekken": ("mistral-nemo", "open-mistral-nemo", "pixtral-12b"),
}


#: Qwen 3 models with a template of their own (the 2507 updates, Coder, VL, Next, ...)
_OTHER_QWEN3 = ("2507", "coder", "vl", "next", "omni", "instruct", "thinking", "embedding")


def template_of(tokenizer: str, model: str) -> str:
    """The chat template a model is counted with: its tokenizer family's, but Qwen 3's for
    a Qwen 3 model (the tokenizer is Qwen 2's) and DeepSeek V3's for a V3 or chat model
    (the tokenizer is R1's)."""
    name = bare_name(model)
    if tokenizer == "qwen2" and name.startswith(("qwen3", "qwen-3")):
        return "qwen3"
    if tokenizer == "deepseek" and name.startswith(("deepseek-v3", "deepseek-chat")):
        return "deepseek_v3"
    return tokenizer


def _own_template(template: str, name: str) -> bool:
    """Whether model ``name``'s own chat template is the one ``template`` ships."""
    if template == "qwen3" and any(part in name for part in _OTHER_QWEN3):
        return False
    return name.startswith(_TEMPLATE_MODELS[template])


def _templated(limits: RequestLimits, template: str, messages: Sequence[Message],
               tools: Sequence[Any] | None, count: Callable[[str], int],
               costs: Sequence[MessageCost]) -> int | None:
    """The exact count from the family's chat template, or None (no template for the
    tokenizer, its package missing, non-text parts, or a request the template refuses)."""
    if template not in _TEMPLATE_RULE or any(c.uncounted for c in costs):
        return None
    if any(not isinstance(m.get("content"), (str, type(None))) for m in messages):
        return None  # content lists: how a server joins the parts is not the template's
    return template_count(limits.tokenizer, messages, tools, count, template=template)


def count_request(model: str, messages: Sequence[Message], *,
                  tools: Sequence[Any] | None = None, response_format: Any = None,
                  counter: TokenCounter | None = None,
                  tokenizer: str | None = None) -> RequestCount:
    """The input tokens of a chat request to ``model`` (see ``request.framing`` for the
    rules). ``counter``: a ``TokenCounter`` you keep between requests (a repeated system
    prompt is then counted once); ``tokenizer``: a tokenizer name instead of the model's.
    A model the registry does not know is counted with the tokenizer its name implies."""
    try:
        limits = request_limits(model, tokenizer=tokenizer)
    except UnknownModel:
        limits = request_limits(model, window=1, tokenizer=tokenizer)
    return _count(limits, messages, tools, response_format, _counter_for(limits, counter))


# ------------------------------------------------------------------------------ fitting
def _turns(messages: Sequence[Message]) -> list[list[int]]:
    """The history that may be dropped, as turns (lists of message indices), oldest first:
    every message before the last user message (the last message when there is no user
    message) but system and developer ones; a turn starts at a user message (messages
    before the first one make a turn of their own)."""
    roles = [m.get("role") for m in messages]
    last_user = max((i for i, r in enumerate(roles) if r == "user"),
                    default=len(messages) - 1)
    turns: list[list[int]] = []
    for i in range(last_user):
        if roles[i] in _SYSTEM_ROLES:
            continue
        if roles[i] == "user" or not turns:
            turns.append([])
        turns[-1].append(i)
    return turns


@dataclass
class _Sizes:
    """The numbers a fit is decided by (input ``tokens`` changes as turns are dropped)."""

    limits: RequestLimits
    margin: Margin
    floor: int
    cap: int | None  # the output limit wanted: max_tokens and the ceiling, whichever is lower
    tokens: int
    reserve: int = 0  # a thinking budget spent beside the output (Gemini)

    def room(self) -> int:
        """Output tokens the window leaves after the input, its margin and ``reserve``."""
        return self.limits.window - self.tokens - self.margin.of(self.tokens) - self.reserve

    def over(self) -> int:
        """Tokens over: the window with ``floor`` output tokens, or the input limit."""
        over = self.floor - self.room()
        if self.limits.max_input is not None:
            over = max(over, self.tokens + self.margin.of(self.tokens) - self.limits.max_input)
        return max(over, 0)


def _drop_turns(sizes: _Sizes, costs: Sequence[int], turns: list[list[int]],
                budget: int | None = None) -> set[int]:
    """The indices of the oldest turns to drop until the request fits (``budget``: until
    the history costs at most that many tokens); ``sizes.tokens`` follows."""
    dropped: set[int] = set()
    history = sum(costs[i] for turn in turns for i in turn)
    for turn in turns:
        if (sizes.over() == 0) if budget is None else history <= budget:
            break
        cost = sum(costs[i] for i in turn)
        sizes.tokens -= cost
        history -= cost
        dropped.update(turn)
    return dropped


def _trim(label: str, messages: Sequence[Message], costs: Sequence[int], dropped: set[int],
          before: int, after: int, why: str) -> None:
    if not dropped:
        return
    turns = sum(1 for i in dropped if messages[i].get("role") == "user") or 1
    log.warning("%s: history trimmed: dropped the %d oldest turn(s), %d of %d messages"
                " (%s tokens); input %s -> %s tokens: %s", label, turns, len(dropped),
                len(messages), f"{sum(costs[i] for i in dropped):,}", f"{before:,}",
                f"{after:,}", why,
                extra={"budgetlens": {"event": "trim", "model": label, "before": before,
                                      "after": after, "messages_dropped": len(dropped),
                                      "reason": why}})


def _output(sizes: _Sizes, requested: int | None, label: str, param: str) -> tuple[int, bool]:
    """The output limit that fits, and whether a requested one was clamped (logged)."""
    room = max(sizes.room(), 0)
    out = room if sizes.cap is None else min(room, sizes.cap)
    if requested is None or out >= requested:
        return out, False
    limits = sizes.limits
    if sizes.cap is not None and out == sizes.cap and sizes.cap < requested:
        why = f"{label}'s output ceiling is {sizes.cap:,} tokens"
    else:
        why = (f"input {sizes.tokens:,} + margin {sizes.margin.of(sizes.tokens):,} leave"
               f" {room:,} of the {limits.window:,}-token window ({limits.window_source})")
    log.warning("%s: %s clamped from %s to %s: %s", label, param, f"{requested:,}",
                f"{out:,}", why,
                extra={"budgetlens": {"event": "clamp", "model": label, "parameter": param,
                                      "before": requested, "after": out, "reason": why}})
    return out, True


# long-function: one request's decisions in order: count, history budget, trim, clamp, refuse
def _fit(limits: RequestLimits, messages: Sequence[Message], *, tools: Sequence[Any] | None,
         response_format: Any, max_tokens: int | None, margin: int | str | Margin | None,
         counter: TokenCounter | None, min_output: int | None, trim: bool,
         history_budget: int | None, label: str, reasoning: int | None = None,
         approximate: bool = False) -> RequestFit:
    if max_tokens is not None and (isinstance(max_tokens, bool) or max_tokens < 1):
        raise ValueError(f"max_tokens must be >= 1, got {max_tokens!r}")
    max_tokens, min_output, reserve, thinking = _place_reasoning(limits, reasoning, max_tokens,
                                                                 min_output)
    counted = _count(limits, messages, tools, response_format, _counter_for(limits, counter))
    if approximate and not counted.approximate:
        counted = replace(counted, approximate=True)
    rule = parse_margin(margin, counted.approximate)
    caps = [c for c in (max_tokens, limits.max_output) if c is not None]
    cap = min(caps) if caps else None
    if min_output is not None:
        floor = min_output
    else:  # half of the output limit asked for, as the contract's clamp (min_output_tokens)
        floor = max(1, (cap or 2) // 2) if max_tokens is not None else 1
    sizes = _Sizes(limits, rule, min(floor, cap) if cap else floor, cap, counted.tokens,
                   reserve)
    costs = [c.total for c in counted.breakdown.messages]
    turns = _turns(messages) if trim or history_budget is not None else []
    dropped: set[int] = set()
    if history_budget is not None:
        dropped = _drop_turns(sizes, costs, turns, history_budget)
        _trim(label, messages, costs, dropped, counted.tokens, sizes.tokens,
              f"the history is over the step's max_history_tokens ({history_budget:,})")
        turns = [t for t in turns if t[0] not in dropped]
    if trim and sizes.over():
        before = sizes.tokens
        more = _drop_turns(sizes, costs, turns)
        if sizes.over() == 0:
            _trim(label, messages, costs, more, before, sizes.tokens, _why(sizes))
            dropped |= more
    base: dict[str, Any] = dict(model=label, window=limits.window, max_input=limits.max_input,
                margin_rule=str(rule), approximate=counted.approximate, notes=counted.notes,
                tokenizer=counted.tokenizer, requested_output=max_tokens,
                output_param=limits.output_param, reasoning=reasoning or 0,
                reasoning_rule=thinking)
    if sizes.over():  # sizes: the request with every turn it may drop dropped
        return _refusal(sizes, counted, messages, len(turns) if trim else 0, base)
    kept = tuple(m for i, m in enumerate(messages) if i not in dropped)
    breakdown = counted.breakdown if not dropped else replace(
        counted.breakdown, messages=tuple(c for c in counted.breakdown.messages
                                          if c.index not in dropped),
        system=counted.breakdown.system)
    if dropped and counted.rule in _TEMPLATE_RULE.values():
        # turns were dropped by their per-message estimates; the kept request is recounted
        sizes.tokens = _count(limits, kept, tools, response_format,
                              _counter_for(limits, counter)).tokens
        breakdown = replace(breakdown, template=breakdown.template + sizes.tokens
                            - breakdown.total)
    out, clamped = _output(sizes, max_tokens, label, limits.output_param)
    approx = "≈" if counted.approximate else ""
    text = (f"{label}: input {approx}{sizes.tokens:,} tokens + margin"
            f" {rule.of(sizes.tokens):,}" + (f" + reasoning {reserve:,}" if reserve else "")
            + f" + output {out:,} fit the {limits.window:,}-token"
            f" window" + (f"; {len(dropped)} history message(s) dropped" if dropped else "")
            + (f"; {limits.output_param} clamped from {max_tokens:,} to {out:,}" if clamped and
               max_tokens else ""))
    return RequestFit(messages=kept, dropped=tuple(messages[i] for i in sorted(dropped)),
                      input_tokens=sizes.tokens, output_tokens=out, margin=rule.of(sizes.tokens),
                      fits=True, over_by=0, breakdown=breakdown, message=text, clamped=clamped,
                      **base)


def _place_reasoning(limits: RequestLimits, reasoning: int | None, max_tokens: int | None,
                     min_output: int | None) -> tuple[int | None, int | None, int, str]:
    """``max_tokens`` and ``min_output`` with a thinking budget placed by the provider's
    rule (``contract.terms.reasoning_rule``, the check's), the tokens it reserves beside
    the output, and the rule's text:

    - OpenAI reasoning models: spent out of ``max_completion_tokens``: the limit sent (and
      its floor) is the visible output plus the budget;
    - Claude: ``thinking.budget_tokens`` lies inside ``max_tokens``: the limit sent stays,
      and may not be clamped to the budget or below it;
    - Gemini (and a provider with no rule known): ``thinkingBudget`` is spent beside the
      output: the budget is reserved from the window."""
    if reasoning is None or reasoning == 0:
        return max_tokens, min_output, 0, ""
    if isinstance(reasoning, bool) or not isinstance(reasoning, int) or reasoning < 0:
        raise ValueError(f"reasoning must be a thinking budget in tokens >= 0, got"
                         f" {reasoning!r}")
    rule = reasoning_rule(limits.info)
    floor = min_output if min_output is not None else \
        max(1, max_tokens // 2) if max_tokens is not None else 1
    if rule.inside_output:
        if max_tokens is not None and max_tokens <= reasoning:
            raise ValueError(f"max_tokens {max_tokens:,} must be above the thinking budget"
                             f" {reasoning:,}: {rule.text}")
        return max_tokens, max(floor, reasoning + 1), 0, rule.text
    if rule.inside_ceiling and limits.output_param == "max_completion_tokens":
        sent = max_tokens + reasoning if max_tokens is not None else None
        return sent, floor + reasoning, 0, rule.text
    return max_tokens, min_output, reasoning, rule.text


def _why(sizes: _Sizes) -> str:
    limits = sizes.limits
    return (f"to leave at least {sizes.floor:,} output tokens in the {limits.window:,}-token"
            f" window ({limits.window_source})" + (
                f" and stay within the {limits.max_input:,}-token input limit"
                f" ({limits.max_input_source})" if limits.max_input is not None else ""))


def _refusal(sizes: _Sizes, counted: RequestCount, messages: Sequence[Message],
             droppable: int, base: dict[str, Any]) -> RequestFit:
    """The unfit result, raised as ``RequestDoesNotFit``: ``over_by`` and the input are those
    of the request with every history turn it may drop dropped (``droppable``); the
    breakdown is of the whole request."""
    limits, n = sizes.limits, sizes.tokens
    kept = (f" even with all {droppable} history turn(s) dropped ({n:,} of"
            f" {counted.tokens:,} input tokens left)" if droppable else "")
    text = (f"{base['model']}: the request does not fit{kept}: input"
            f" ({counted.breakdown.line()}) {n:,} tokens + margin {sizes.margin.of(n):,} +"
            + (f" reasoning {sizes.reserve:,} +" if sizes.reserve else "")
            + f" at least {sizes.floor:,} output tokens > the {limits.window:,}-token window"
            f" ({limits.window_source})" + (f" or the {limits.max_input:,}-token input limit"
                                              f" ({limits.max_input_source})"
                                            if limits.max_input is not None else "")
            + f", by {sizes.over():,}")
    fit = RequestFit(messages=tuple(messages), dropped=(), input_tokens=n,
                     output_tokens=max(sizes.room(), 0), margin=sizes.margin.of(n), fits=False,
                     over_by=sizes.over(), breakdown=counted.breakdown, message=text, **base)
    raise RequestDoesNotFit(fit)


def fit_request(model: str, messages: Sequence[Message], *,
                tools: Sequence[Any] | None = None, response_format: Any = None,
                max_tokens: int | None = None, serving: Mapping[str, object] | None = None,
                margin: int | str | Margin | None = None, counter: TokenCounter | None = None,
                min_output: int | None = None, trim: bool = True,
                window: int | None = None, max_output: int | None = None,
                tokenizer: str | None = None, output_param: str | None = None,
                gateway: str | None = None, variant: str | None = None,
                reasoning: int | None = None, approximate: bool = False) -> RequestFit:
    """Fit a chat request to ``model`` (see the module docstring): the messages to send,
    the output limit, and why; ``RequestDoesNotFit`` when nothing makes it fit.

    - ``max_tokens``: the output limit you would send (clamped); ``min_output``: the least
      output worth sending (default half of ``max_tokens``, else 1 token); ``trim=False``
      refuses instead of trimming the history;
    - ``serving``: the server's limit (``{"max_model_len": 8192}``, ``{"num_ctx": 8192}``);
      ``margin``: tokens or ``"2% + 128"`` (default: 0 when exact, ``"2% + 128"`` when ≈);
    - ``counter``: a ``TokenCounter`` you keep between requests: a text counted before (a
      repeated system prompt, the history) is not encoded again (without one, every text
      is encoded and nothing is kept);
    - ``gateway``: the gateway in front of the model (``"github-models"``): its sourced
      per-request cap (models/gateways.json) caps the input as the model's input limit does;
      ``variant``: the model's variant (``"1m"``, models/variants.json) sets the window;
    - ``reasoning``: a thinking budget, placed as the provider spends it (as the check
      does, contract/terms.py): inside ``max_completion_tokens`` for OpenAI's reasoning
      models (``max_tokens`` is then the visible output, and the limit sent is it plus
      ``reasoning``), inside ``max_tokens`` for Claude, beside the output for Gemini (and
      any other model): reserved from the window;
    - ``window``, ``max_output``, ``tokenizer``: for a model the registry does not know (or
      to override it); ``approximate=True``: the count is ≈ whatever its rule (a request
      API whose provider publishes no counting rule): it gets the margin of one;
      ``output_param``: the name of the output limit the request uses
      (``max_output_tokens`` of the Responses API; default: the model's).
    """
    limits = request_limits(model, serving=serving, window=window, max_output=max_output,
                            tokenizer=tokenizer, variant=variant, gateway=gateway)
    if output_param is not None:
        limits = replace(limits, output_param=output_param)
    return _fit(limits, messages, tools=tools, response_format=response_format,
                max_tokens=max_tokens, margin=margin, counter=counter, min_output=min_output,
                trim=trim, history_budget=None, label=limits.model, reasoning=reasoning,
                approximate=approximate)


def check_request(step: StepBudget, messages: Sequence[Message], *,
                  report: PipelineReport | None = None, tools: Sequence[Any] | None = None,
                  response_format: Any = None, max_tokens: int | None = None,
                  margin: int | str | Margin | None = None,
                  counter: TokenCounter | None = None, min_output: int | None = None,
                  trim: bool = True) -> RequestFit:
    """``fit_request`` for a step of a checked pipeline (``check_pipeline(...).steps[i]``):
    its model (the step's own, else ``report.model``) and that model's tokenizer (the
    pipeline's, ``report.tokenizer``, for the pipeline's model), its window (``serving``
    included), output ceiling and output limit (``max_tokens`` unless given), its margin
    (unless 0: then the default) and, with ``use_history``, its ``max_history_tokens``: the
    history is first trimmed to that budget. Its ``reasoning`` is placed as ``fit_request``
    places it (inside OpenAI's ``max_completion_tokens``, inside Claude's ``max_tokens``,
    reserved beside Gemini's output). The step's window already holds its
    ``variant`` and ``serving`` (its own, else config.json's for its model, else the
    workspace's); its input limit is the lower of its model's ``max_input`` (none under a
    variant) and its gateway's cap (BL054, BL067): the check's numbers, not the registry's."""
    model = step.model or (report.model if report is not None else None) or "unknown"
    tokenizer = None if step.model else (report.tokenizer if report is not None else None)
    ceiling = step.ceiling or (report.output_ceiling if report is not None else None)
    limits = request_limits(model, window=step.window.value, tokenizer=tokenizer,
                            max_output=ceiling.value if ceiling is not None else None)
    limits = replace(limits, window_source=step.window.source or limits.window_source,
                     **_step_input_limit(step))
    if max_tokens is None and step.output.value:
        max_tokens = step.output.value
    return _fit(limits, messages, tools=tools, response_format=response_format,
                max_tokens=max_tokens,
                margin=margin if margin is not None else step.margin.value or None,
                counter=counter, min_output=min_output, trim=trim,
                history_budget=step.history.value if step.use_history else None,
                label=f"step {step.step!r} ({limits.model})",
                reasoning=step.reasoning.value if step.reasoning is not None else None)


def _step_input_limit(step: StepBudget) -> dict[str, Any]:
    """The input limit of ``step`` as the check has it: the lower of its ``max_input`` and
    its gateway's cap, with the source."""
    limits = [t for t in (step.max_input, step.gateway_cap) if t is not None]
    if not limits:
        return {"max_input": None, "max_input_source": ""}
    low = min(limits, key=lambda t: t.value)
    return {"max_input": low.value, "max_input_source": low.source}
