"""Check a packaged .vsix against what Open VSX (``ovsx publish``) and the Marketplace need.

    python3 scripts/check_vsix.py budgetlens.vsix

A .vsix is a zip: ``extension.vsixmanifest``, ``[Content_Types].xml`` and the extension's
files under ``extension/``. Checked: the manifest's fields (name, publisher, version,
repository, license, engines.vscode, icon, categories), that the licence file and the icon
are inside (the icon a PNG of at least 128x128), that ``extension.vsixmanifest`` names the
same identity, and that the files the extension runs are there. Prints each problem; exit
status 1 if there is one. Standard library only.
"""

from __future__ import annotations

import json
import re
import struct
import sys
import zipfile
from typing import Any
from xml.etree import ElementTree

#: what the extension needs at run time, besides package.json
RUNTIME_FILES = ("extension/dist/extension.js", "extension/schemas/pipeline.schema.json")
VSIX_NS = "{http://schemas.microsoft.com/developer/vsx-schema/2011}"
SEMVER = re.compile(r"\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?")
NAME = re.compile(r"[a-z0-9][a-z0-9-]*")


def _png_size(data: bytes) -> tuple[int, int] | None:
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        return None
    width, height = struct.unpack(">II", data[16:24])
    return int(width), int(height)


def _manifest_problems(pkg: dict[str, Any]) -> list[str]:
    problems = []
    for key in ("name", "publisher", "version", "license", "icon", "displayName",
                "description"):
        if not isinstance(pkg.get(key), str) or not pkg[key].strip():
            problems.append(f"package.json: no {key}")
    for key in ("name", "publisher"):
        if isinstance(pkg.get(key), str) and not NAME.fullmatch(pkg[key]):
            problems.append(f"package.json: {key} {pkg[key]!r} is not lower-case a-z0-9-")
    if isinstance(pkg.get("version"), str) and not SEMVER.fullmatch(pkg["version"]):
        problems.append(f"package.json: version {pkg['version']!r} is not semver")
    repo = pkg.get("repository")
    url = repo.get("url") if isinstance(repo, dict) else repo
    if not isinstance(url, str) or not url.startswith("https://"):
        problems.append("package.json: no repository url (https)")
    engines = pkg.get("engines")
    if not isinstance(engines, dict) or not isinstance(engines.get("vscode"), str):
        problems.append("package.json: no engines.vscode")
    if not isinstance(pkg.get("categories"), list) or not pkg["categories"]:
        problems.append("package.json: no categories")
    return problems


def _vsixmanifest_problems(text: bytes, pkg: dict[str, Any]) -> list[str]:
    root = ElementTree.fromstring(text)
    identity = root.find(f"{VSIX_NS}Metadata/{VSIX_NS}Identity")
    if identity is None:
        return ["extension.vsixmanifest: no Metadata/Identity"]
    problems = []
    for attr, key in (("Id", "name"), ("Publisher", "publisher"), ("Version", "version")):
        if identity.get(attr) != pkg.get(key):
            problems.append(f"extension.vsixmanifest: Identity {attr}={identity.get(attr)!r}"
                            f" but package.json {key}={pkg.get(key)!r}")
    assets = {a.get("Type"): a.get("Path") for a in root.iter(f"{VSIX_NS}Asset")}
    for kind in ("Microsoft.VisualStudio.Code.Manifest",
                 "Microsoft.VisualStudio.Services.Content.License",
                 "Microsoft.VisualStudio.Services.Icons.Default"):
        if kind not in assets:
            problems.append(f"extension.vsixmanifest: no {kind} asset")
    return problems


def problems(vsix: str) -> list[str]:
    try:
        archive = zipfile.ZipFile(vsix)
    except (OSError, zipfile.BadZipFile) as exc:
        return [f"{vsix}: not a zip ({exc})"]
    with archive:
        names = set(archive.namelist())
        if "extension/package.json" not in names:
            return [f"{vsix}: no extension/package.json"]
        pkg = json.loads(archive.read("extension/package.json"))
        found = _manifest_problems(pkg)
        found += [f"{vsix}: no {f}" for f in RUNTIME_FILES if f not in names]
        if not any(re.fullmatch(r"extension/LICEN[CS]E(\.(txt|md))?", n, re.I) for n in names):
            found.append(f"{vsix}: no LICENSE file")
        icon = f"extension/{pkg.get('icon')}"
        if icon not in names:
            found.append(f"{vsix}: the icon {icon} is missing")
        else:
            size = _png_size(archive.read(icon))
            if size is None or min(size) < 128:
                found.append(f"{vsix}: the icon is not a PNG of 128x128 or more ({size})")
        if "extension.vsixmanifest" not in names:
            found.append(f"{vsix}: no extension.vsixmanifest")
        else:
            found += _vsixmanifest_problems(archive.read("extension.vsixmanifest"), pkg)
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: check_vsix.py FILE.vsix", file=sys.stderr)
        return 2
    found = problems(argv[0])
    for problem in found:
        print(f"vscode: {problem}", file=sys.stderr)
    if not found:
        print(f"vscode: {argv[0]} has what Open VSX needs")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
