"""Rebuild the tiktoken rank files shipped inside the package, reproducibly and verifiably.

Source: the npm package ``tiktoken`` (its ``encoders/<name>.json`` hold ``pat_str``,
``special_tokens`` and a compressed ``bpe_ranks`` string of lines ``! <offset> <b64> <b64> ...``
where the token at position i has rank offset + i). They are converted to the standard
``.tiktoken`` format (``<b64 token> <rank>`` per line) and each result must match the sha256
that tiktoken itself publishes (``tiktoken_ext/openai_public.py``), or nothing is written.

Usage: python scripts/vendor_encodings.py [--npm-dir DIR]
Without --npm-dir the script runs ``npm pack tiktoken@<version>`` in a temporary folder.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

NPM_VERSION = "1.0.22"
# sha256 of the .tiktoken files as published by tiktoken (tiktoken_ext/openai_public.py).
EXPECTED_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
OUT_DIR = (Path(__file__).resolve().parent.parent / "shared_core" / "budgetlens" / "tokens"
           / "encodings")


def convert(bpe_ranks: str) -> bytes:
    """The npm compressed rank string -> the bytes of a standard .tiktoken file."""
    lines: list[str] = []
    for row in bpe_ranks.split("\n"):
        if not row:
            continue
        parts = row.split(" ")
        if parts[0] != "!":
            raise ValueError(f"unexpected rank row start: {parts[0]!r}")
        offset = int(parts[1])
        for i, token in enumerate(parts[2:]):
            lines.append(f"{token} {offset + i}")
    ranked = sorted(lines, key=lambda line: int(line.rsplit(" ", 1)[1]))
    return ("\n".join(ranked) + "\n").encode("ascii")


def fetch_npm(tmp: Path) -> Path:
    subprocess.run(["npm", "pack", f"tiktoken@{NPM_VERSION}"], cwd=tmp, check=True,
                   stdout=subprocess.DEVNULL)
    with tarfile.open(tmp / f"tiktoken-{NPM_VERSION}.tgz") as tar:
        tar.extractall(tmp, filter="data")
    return tmp / "package"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--npm-dir", type=Path, help="an unpacked npm tiktoken package")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        npm_dir = args.npm_dir or fetch_npm(Path(tmp))
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        meta: dict[str, object] = {"source": f"npm tiktoken@{NPM_VERSION}", "encodings": {}}
        for name, expected in EXPECTED_SHA256.items():
            spec = json.loads((npm_dir / "encoders" / f"{name}.json").read_text("utf-8"))
            data = convert(spec["bpe_ranks"])
            digest = hashlib.sha256(data).hexdigest()
            if digest != expected:
                print(f"{name}: sha256 {digest} != published {expected}; nothing written",
                      file=sys.stderr)
                return 1
            (OUT_DIR / f"{name}.tiktoken").write_bytes(data)
            meta["encodings"][name] = {  # type: ignore[index]
                "file": f"{name}.tiktoken",
                "sha256": digest,
                "pat_str": spec["pat_str"],
                "special_tokens": spec["special_tokens"],
            }
            print(f"{name}: {len(data):,} bytes, sha256 verified")
        (OUT_DIR / "encodings.json").write_text(json.dumps(meta, indent=2) + "\n", "utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
