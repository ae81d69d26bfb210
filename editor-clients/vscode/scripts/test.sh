#!/usr/bin/env bash
# The VS Code extension's checks, offline except for the npm registry:
#   npm ci, type-check (tsc --noEmit), lint (eslint), unit tests (node --test), package (.vsix)
#   and its manifest checked for Open VSX (scripts/check_vsix.py).
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
node -e "
  // the .vsix (a zip) must hold the bundle, the manifest and the schema yamlValidation points at
  const names = require('child_process').execFileSync('python3', ['-m', 'zipfile', '-l', 'budgetlens.vsix']).toString();
  for (const f of ['extension/dist/extension.js', 'extension/package.json', 'extension/schemas/pipeline.schema.json']) {
    if (!names.includes(f)) { console.error('vscode: ' + f + ' is missing from budgetlens.vsix'); process.exit(1); }
  }
"
# the manifest fields, licence and icon Open VSX and the Marketplace require
python3 scripts/check_vsix.py budgetlens.vsix
echo "vscode: budgetlens.vsix built ($(wc -c < budgetlens.vsix) bytes)"
