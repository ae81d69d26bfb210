"""``budgetlens inject PLAN.json [--format json|text]``: plan one unified injection.

PLAN.json describes the request (``budgetlens.InjectionRequest``): the window, the tokens used
before injection, the policy, the buckets with their files (texts and modes) and the knowledge
card candidates (provenance and texts per tier). The command prints the unified injection
manifest, the budget and the rendered injection. Exit status: 0, or 1 when the tokens used
before already overrun the window; 2 for unreadable or invalid input.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from pydantic import ValidationError

from budgetlens import (
    InjectionPlan,
    InjectionRequest,
    TokenCounter,
    TokenizerError,
    get_tokenizer,
    plan_injection,
)
from budgetlens.assembly.input_errors import describe_validation_error
from budgetlens.serialize import to_jsonable
from budgetlens_cli.io import invalid, read_text_arg
from budgetlens_cli.main import EXIT_FINDINGS, EXIT_OK, UsageError

MAX_PLAN_CHARS = 64 * 1024 * 1024


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "inject", help="plan a unified injection of knowledge cards and bucket content",
        description="Compute the unified injection budget for the request in PLAN.json ('-'"
                    " reads standard input), suppress overlapping cards, render cards and"
                    " buckets within their budgets, and print the manifest and the injection.")
    p.add_argument("plan", metavar="PLAN.json")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.add_argument("--tokenizer", default=None,
                   help="tokenizer (overrides the plan's 'tokenizer'; default cl100k_base)")
    p.set_defaults(run=run)


def load_request(name: str) -> InjectionRequest:
    text = read_text_arg(name)
    if len(text) > MAX_PLAN_CHARS:
        raise UsageError(f"{name}: larger than {MAX_PLAN_CHARS // (1024 * 1024)} MiB")
    try:
        return InjectionRequest.model_validate_json(text)
    except ValidationError as exc:
        raise invalid(name, "plan", describe_validation_error(exc)) from None


def run(args: argparse.Namespace) -> int:
    request = load_request(args.plan)
    try:
        counter = TokenCounter(get_tokenizer(args.tokenizer or request.tokenizer))
    except TokenizerError as exc:
        raise UsageError(str(exc)) from None
    plan = plan_injection(request, counter=counter)
    if args.format == "json":
        print(json.dumps(to_jsonable(plan), indent=2, ensure_ascii=False))
    else:
        print(render_text(plan))
    return EXIT_FINDINGS if plan.budget.context_overrun else EXIT_OK


def render_text(plan: InjectionPlan) -> str:
    m, b = plan.manifest, plan.budget
    cards_used = sum(c.token_count for c in m.knowledge_cards)
    buckets_used = sum(c.token_count for c in m.bucket_cards)
    lines = [
        f"injection {b.total_budget:,}: cards {b.knowledge_card_budget:,} · buckets "
        f"{b.bucket_budget:,}  ({b.split.replace('_', ' ')}"
        f"{', minimums scaled' if b.scaled else ''}; remaining context {b.remaining:,};"
        f" {plan.tokenizer})",
        f"used {m.total_tokens_used:,}: cards {cards_used:,} · buckets {buckets_used:,};"
        f" {m.cards_suppressed_by_bucket_overlap} card(s) suppressed by bucket overlap;"
        f" degraded: {m.degraded_state}",
    ]
    if b.context_overrun:
        lines.append(f"error: tokens used before exceed the window by {-b.remaining:,}:"
                     " nothing can be injected")
    if m.knowledge_cards:
        lines.append("knowledge cards:")
        for c in m.knowledge_cards:
            state = (f"suppressed ({c.suppression_reason})" if c.suppressed
                     else f"{c.rendering_tier} {c.token_count:,} tokens")
            lines.append(f"  {c.node_id}  {c.canonical_name} ({c.node_kind})  relevance "
                         f"{c.relevance_score:g}  {state}")
    if m.bucket_cards:
        lines.append("buckets:")
        for bc in m.bucket_cards:
            bg = ("background suppressed by overlap" if bc.background_suppressed_by_overlap
                  else "background" if bc.background_included else "no background")
            lines.append(f"  {bc.bucket_id}  {bc.bucket_title or '-'}  {bc.mode}  "
                         f"{bc.token_count:,} tokens  {bg}; files inlined {bc.files_inlined},"
                         f" listed {bc.files_manifested}")
        for f in plan.files:
            if f.mode != "inline":
                lines.append(f"    {f.bucket_id}:{f.file_id} {f.mode}"
                             f"{': ' + f.reason if f.reason else ''}")
    lines.append("--- rendered injection ---")
    lines.append(plan.rendered.rstrip("\n"))
    return "\n".join(lines)
