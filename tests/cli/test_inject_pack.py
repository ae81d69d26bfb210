"""``budgetlens inject`` and ``budgetlens pack``: outputs, exit codes and input errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from budgetlens import get_tokenizer
from budgetlens_cli import inject_cmd, pack_cmd
from budgetlens_cli.main import main

ROOT = Path(__file__).resolve().parents[2]
PLAN = ROOT / "examples" / "injection" / "plan.json"
DOCS = ROOT / "examples" / "packing" / "docs.json"
MAP = ROOT / "examples" / "packing" / "intents.yaml"
ENC = get_tokenizer("cl100k_base")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(tmp_path: Path, name: str, content: Any) -> str:
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content), "utf-8")
    return str(path)


# ---------------------------------------------------------------------------------------------
# inject


def test_inject_example_json(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "inject", str(PLAN), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    m = data["manifest"]
    # remaining 32,000 - 11,850 = 20,150; 20% = 4,030; direct target: 20% = 806, 80% = 3,224
    assert (m["total_budget_tokens"], m["knowledge_card_budget_tokens"],
            m["bucket_content_budget_tokens"]) == (4030, 806, 3224)
    assert m["trace_id"] == "req-2026-04-03-henderson-0042"
    assert m["timestamp"] == "2026-04-03T14:05:00Z"
    cards = {c["node_id"]: c for c in m["knowledge_cards"]}
    assert cards["ent-complaint-claims"]["suppression_reason"] == "bucket_file_overlap"
    assert not cards["ent-acme-8k"]["suppressed"]  # its file is in manifest mode
    assert m["cards_suppressed_by_bucket_overlap"] == 1
    used = sum(c["token_count"] for c in m["knowledge_cards"]) + \
        sum(b["token_count"] for b in m["bucket_cards"])
    assert m["total_tokens_used"] == used == len(ENC.encode(data["rendered"]))
    # three entity cards of matter-henderson are injected: its background is suppressed
    henderson = m["bucket_cards"][0]
    assert henderson["background_suppressed_by_overlap"] and not henderson["background_included"]


def test_inject_example_text(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "inject", str(PLAN))
    assert code == 0
    assert out.startswith("injection 4,030: cards 806 · buckets 3,224  (direct target;")
    assert "ent-complaint-claims" in out and "suppressed (bucket_file_overlap)" in out
    assert "--- rendered injection ---\n[organization: Henderson Capital Partners LP]" in out


def test_inject_overrun_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = write(tmp_path, "p.json", {"model_context_window": 1000, "tokens_used_before": 1200,
                                      "knowledge_cards": []})
    code, out, _ = run(capsys, "inject", plan)
    assert code == 1
    assert "tokens used before exceed the window by 200" in out


@pytest.mark.parametrize(("plan", "message"), [
    ({"tokens_used_before": 0}, "model_context_window: field required"),
    ({"model_context_window": "big", "tokens_used_before": 0},
     "model_context_window: expected an integer, got a string"),
    ({"model_context_window": 10, "tokens_used_before": 0,
      "knowledge_cards": [{"node_kind": "x", "canonical_name": "y", "relevance_score": 1,
                           "compact": "z"}]},
     "knowledge_cards[0].node_id: field required"),
    ({"model_context_window": 10, "tokens_used_before": 0,
      "policy": {"knowledge_card_share_default": 1.5}},
     "policy.knowledge_card_share_default: input should be less than or equal to 1"),
    ({"model_context_window": 10, "tokens_used_before": 0, "polcy": {}},
     "polcy: unknown field"),
    ({"model_context_window": 10, "tokens_used_before": 0,
      "buckets": [{"bucket_id": "b", "files": [{"file_id": "f", "mode": "embed"}]}]},
     "buckets[0].files[0].mode: input should be 'inline' or 'manifest'"),
    ({"model_context_window": 10, "tokens_used_before": 0,
      "knowledge_cards": [{"node_id": "a", "node_kind": "x", "canonical_name": "y",
                           "relevance_score": 1, "compact": "z"},
                          {"node_id": "a", "node_kind": "x", "canonical_name": "y",
                           "relevance_score": 1, "compact": "z"}]},
     "knowledge_cards[1].node_id: 'a' repeats knowledge_cards[0]"),
    ([1, 2], "(top level): expected an object, got an array"),
])
def test_inject_bad_input_names_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                          plan: Any, message: str) -> None:
    path = write(tmp_path, "p.json", plan)
    code, out, err = run(capsys, "inject", path)
    assert code == 2
    assert out == ""
    assert f"{path}: invalid plan:\n" in err
    assert f"\n  {message}" in err, err
    assert "Traceback" not in err


def test_inject_unreadable_inputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, "latin1.json", '{"trace_id": "caf\u00e9"}'.encode("latin-1"))
    code, _, err = run(capsys, "inject", path)
    assert code == 2 and "not UTF-8 text" in err and "Traceback" not in err
    code, _, err = run(capsys, "inject", str(tmp_path / "missing.json"))
    assert code == 2 and "no such file" in err
    path = write(tmp_path, "broken.json", '{"model_context_window": ')
    code, _, err = run(capsys, "inject", path)
    assert code == 2 and "invalid JSON" in err
    path = write(tmp_path, "p.json", {"model_context_window": 10, "tokens_used_before": 0,
                                      "tokenizer": "no-such-model"})
    code, _, err = run(capsys, "inject", path)
    assert code == 2 and "unknown tokenizer 'no-such-model'" in err


# ---------------------------------------------------------------------------------------------
# pack


def test_pack_example_json_with_a_char_cap(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "pack", str(DOCS), "--intent", "generate episodes 7-12",
                         "--max-chars", "1200", "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    assert set(data) >= {"context", "chars", "tokens", "report"}
    assert data["chars"] == len(data["context"]) <= 1200
    assert data["tokens"] == len(ENC.encode(data["context"]))
    assert data["intent"]["name"] == "generate_episode_synopsis"
    rows = {r["id"]: r for r in data["report"]}
    assert set(rows) == {d["id"] for d in json.loads(DOCS.read_text("utf-8"))}
    for r in data["report"]:
        assert set(r) >= {"id", "status", "rank", "chars_before", "chars_after", "reason"}
        assert r["status"] in ("kept", "trimmed", "dropped")
    # earlier synopses are not needed to write the next ones
    assert rows["syn-1-6"]["status"] == "dropped"
    assert "is not required" in rows["syn-1-6"]["reason"]


def test_pack_text_with_a_map_and_structured_intent(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "pack", str(DOCS), "--map", str(MAP), "--intent",
                       '{"intent": "review_synopsis", "params": {"episodes": "1-6"}}',
                       "--max-tokens", "400")
    assert code == 0
    first = out.splitlines()[0]
    assert first.startswith("intent review_synopsis (structured): ")
    assert first.endswith("cap 400 tokens")
    assert "\n--- context ---\n## episode_planning · ep-plan-001\n" in out


@pytest.mark.parametrize(("docs", "message"), [
    ([{"id": f"d{i}", "schema_type": "t", "data": i} for i in range(3)]
     + [{"id": "d3", "data": {"x": 1}}], "docs[3].schema_type: field required"),
    ([{"id": "a", "schema_type": ["t"], "data": 1}],
     "docs[0].schema_type: expected a string, got an array"),
    ([{"id": "a", "schema_type": "t", "data": 1, "created_at": "yesterday"}],
     "docs[0].created_at: not an ISO 8601 date-time: 'yesterday'"),
    ({"docs": []}, "docs: expected an array, got an object"),
])
def test_pack_bad_documents_name_the_field(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           docs: Any, message: str) -> None:
    path = write(tmp_path, "docs.json", docs)
    code, out, err = run(capsys, "pack", path, "--intent", "general")
    assert code == 2 and out == ""
    assert f"\n  {message}" in err, err
    assert "Traceback" not in err


def test_pack_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "pack", str(DOCS), "--intent", "x", "--max-chars", "5",
                       "--max-tokens", "5")
    assert code == 2 and "not allowed with argument" in err
    code, _, err = run(capsys, "pack", str(DOCS), "--intent", "x", "--max-chars", "-5")
    assert code == 2 and "expected a number >= 0" in err
    code, _, err = run(capsys, "pack", str(DOCS))
    assert code == 2 and "--intent" in err
    code, _, err = run(capsys, "pack", str(DOCS), "--intent", '{"intent": "nope"}')
    assert code == 2 and "intent.intent: unknown intent 'nope'" in err
    code, _, err = run(capsys, "pack", str(DOCS), "--intent", '{"intent": ')
    assert code == 2 and "--intent: not valid JSON" in err
    bad_map = write(tmp_path, "m.yaml", "default_intent: z\nintents: {a: {}}\n")
    code, _, err = run(capsys, "pack", str(DOCS), "--intent", "a", "--map", bad_map)
    assert code == 2 and "default_intent: 'z' is not one of the intents" in err
    path = write(tmp_path, "bin.json", b"\xff\xfe[]")
    code, _, err = run(capsys, "pack", path, "--intent", "a")
    assert code == 2 and "not UTF-8 text" in err
    assert "Traceback" not in err


def test_pack_huge_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pack_cmd, "MAX_DOCS_CHARS", 2 * 1024 * 1024)
    path = write(tmp_path, "big.json", [{"id": "a", "schema_type": "t",
                                         "data": "x" * (3 * 1024 * 1024)}])
    code, _, err = run(capsys, "pack", path, "--intent", "general")
    assert code == 2 and "larger than 2 MiB" in err


def test_inject_huge_input_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(inject_cmd, "MAX_PLAN_CHARS", 1024 * 1024)
    path = write(tmp_path, "big.json", {"model_context_window": 10, "tokens_used_before": 0,
                                        "trace_id": "x" * (2 * 1024 * 1024)})
    code, _, err = run(capsys, "inject", path)
    assert code == 2 and "larger than 1 MiB" in err
