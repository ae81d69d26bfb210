"""The settings.injection policy in the editor: each step's split as a lens, the tightest one
above ``injection``, a hover listing every step, and BL102 at an out-of-range value."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from .harness import codes_of, copy_examples, find, running_server, td, to_core_range, units

# A pipeline with its own step so its lenses are in this file. With absolute 1000 and 50% of
# a window of 8192 minus a few hundred fixed tokens, the total is 1000 (the absolute cap):
#   default shares 0.4/0.6: cards max(500, 400) = 500, buckets max(500, 600) = 600;
#     1100 > 1000 -> cards floor(500 * 1000 / 1100) = 454, buckets 1000 - 454 = 546
#   direct target 0.2/0.8: cards max(500, 200) = 500, buckets max(500, 800) = 800;
#     1300 > 1000 -> cards floor(500 * 1000 / 1300) = 384, buckets 616
PIPELINE = """\
settings:
  max_context_tokens: 2048
  injection:
    max_injection_tokens_absolute: 1000
    max_injection_tokens_pct_of_context: 0.5
steps:
  - id: ask
    type: call_model
    prompt_key: router
    user_parts:
      template: "Q: {q}"
    max_output_tokens: 256
"""
LABEL = "injection 1,000: cards 454 · buckets 546"


def _workspace(tmp: Path) -> Path:
    root = copy_examples(tmp)
    (root / "pipelines/injected.yaml").write_text(PIPELINE, "utf-8")
    return root


async def test_step_and_injection_lenses_show_the_split(tmp_path: Path) -> None:
    async with running_server(_workspace(tmp_path)) as ed:
        uri = ed.open("pipelines/injected.yaml")
        result = await ed.client.text_document_code_lens_async(types.CodeLensParams(
            text_document=td(uri)))
        titles: dict[int, list[str]] = {}
        for lens in result or []:
            assert lens.command is not None
            titles.setdefault(lens.range.start.line, []).append(lens.command.title)
        assert LABEL in titles[find(PIPELINE, "- id: ask")[0]]
        assert titles[find(PIPELINE, "injection:")[0]] == [f"tightest ask: {LABEL}"]


async def test_hover_on_injection_lists_each_steps_split(tmp_path: Path) -> None:
    async with running_server(_workspace(tmp_path)) as ed:
        uri = ed.open("pipelines/injected.yaml")
        line, col = find(PIPELINE, "injection:")
        line_text = PIPELINE.split("\n")[line]
        hover = await ed.client.text_document_hover_async(types.HoverParams(
            text_document=td(uri),
            position=types.Position(line=line,
                                    character=units(line_text[:col + 1], ed.encoding))))
        assert hover is not None and isinstance(hover.contents, types.MarkupContent)
        text = hover.contents.value
        assert "At most 1,000 tokens or 50% of what is left" in text
        assert (f"- `ask`: {LABEL} (bucket as direct target: cards 384 · buckets 616)"
                in text)


async def test_an_out_of_range_share_is_flagged_at_its_value(tmp_path: Path) -> None:
    async with running_server(_workspace(tmp_path)) as ed:
        uri = ed.open("pipelines/injected.yaml")
        await ed.wait_diagnostics(uri, lambda ds: codes_of(ds) == [])
        bad = PIPELINE.replace("max_injection_tokens_pct_of_context: 0.5",
                               "max_injection_tokens_pct_of_context: 1.5")
        ed.replace_all(uri, bad)
        diags = await ed.wait_diagnostics(uri, lambda ds: "BL102" in codes_of(ds))
        (d,) = [d for d in diags if d.code == "BL102"]
        line, col = find(bad, "1.5")
        rng = to_core_range(bad, d.range, ed.encoding)
        assert (rng.start.line, rng.start.character) == (line, col)
        assert (rng.end.line, rng.end.character) == (line, col + 3)
        assert d.severity == types.DiagnosticSeverity.Error
