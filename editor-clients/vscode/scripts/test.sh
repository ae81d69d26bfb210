#!/usr/bin/env bash
# The VS Code extension's checks, offline except for the npm registry:
#   npm ci, type-check (tsc --noEmit), lint (eslint), unit tests (node --test), package (.vsix).
# Install scripts are not run (`--ignore-scripts`): esbuild's binary comes from its platform
# package, and nothing else the build uses needs one (@vscode/vsce-sign's would download).
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n--> vscode: %s\n' "$*"; }

step "npm ci"
npm ci --ignore-scripts --no-audit --no-fund
step "type-check"
npm run --silent typecheck
step "lint"
npm run --silent lint
step "unit tests"
npm test
step "package"
npm run --silent package
test -s budgetlens.vsix
python3 -m zipfile -l budgetlens.vsix | grep -q 'extension/dist/extension.js'
python3 -m zipfile -l budgetlens.vsix | grep -q 'extension/schemas/pipeline.schema.json'
echo "vscode: budgetlens.vsix built ($(wc -c < budgetlens.vsix) bytes)"
