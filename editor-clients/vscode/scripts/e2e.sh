#!/usr/bin/env bash
# Real VS Code end-to-end test of the budgetlens extension.
#
# code-server 4.100.3 (VS Code 1.100.3, from the npm registry) runs the packaged .vsix against a
# copy of examples/; Debian's Chromium, driven by playwright-core (no browser download), opens
# the workbench and checks what a user sees: the over-budget squiggle and Problems entry, the
# code lens, the Ctrl+. quick-fix that clamps the number, and Show Hierarchy Context on a cut
# JSON; then a GitHub Models and a Prompty prompt file (from e2e/workspace/) each show their
# warning and per-variable lens. Screenshots go to test-artifacts/vscode-e2e/ (gitignored) at
# the repository root.
# Then the pipeline JSON Schema is checked in yaml-language-server (Red Hat's YAML engine)
# through the `# yaml-language-server: $schema=...` opt-in comment.
#
# Usage: editor-clients/vscode/scripts/e2e.sh
# Needs: root or sudo for apt-get (chromium, ripgrep, libkrb5-dev); the npm registry and PyPI.
# Environment: E2E_KEEP=1 keeps the temporary workspace and logs; E2E_PORT picks the port.
# E2E_ONLY=<regex> runs only the checks whose names match (the set-up checks always run).
# E2E_WAIT_MS (default 120000) bounds each wait: a hang guard, never a time a step must beat.
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"       # editor-clients/vscode
ROOT="$(cd "$HERE/../.." && pwd)"
E2E="$HERE/e2e"
ARTIFACTS="$ROOT/test-artifacts/vscode-e2e"

log() { printf '\n==> e2e: %s\n' "$*"; }
need_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# --- system packages: Chromium, ripgrep (VS Code's search; also seeds @vscode/ripgrep),
#     libkrb5-dev (headers for code-server's kerberos module)
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v rg >/dev/null 2>&1 || missing+=(ripgrep)
[ -e /usr/include/krb5.h ] || [ -e /usr/include/gssapi/gssapi.h ] || missing+=(libkrb5-dev)
if [ ${#missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${missing[*]}"
  need_root apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive need_root apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
    "${missing[@]}" >/dev/null
fi

# --- the language server: the repository's venv, put on PATH (the extension finds
#     `budgetlens` there: the PATH branch of its server resolution)
if [ ! -x "$ROOT/.venv/bin/budgetlens" ]; then
  log "creating .venv with budgetlens"
  python3 -m venv "$ROOT/.venv"
  "$ROOT/.venv/bin/python" -m pip install -q --disable-pip-version-check -e "$ROOT"
fi

# --- the extension's .vsix
log "packaging the extension"
cd "$HERE"
[ -d node_modules ] || npm ci --ignore-scripts --no-audit --no-fund
npm run --silent package >/dev/null
VSIX="$HERE/budgetlens.vsix"

# --- code-server and playwright-core
export npm_config_unsafe_perm=true npm_config_yes=true
CS="$E2E/node_modules/code-server"
DONE_MARK="$CS/.budgetlens-postinstall-done"
if [ ! -f "$DONE_MARK" ]; then
  log "installing code-server 4.100.3, playwright-core and yaml-language-server (npm ci)"
  cd "$E2E"
  npm ci --no-audit --no-fund
  # @vscode/ripgrep's postinstall downloads rg from GitHub, which is not reachable: seed its
  # download cache with a tarball of Debian's rg under the name it looks for.
  RG_PKG_VERSION="$(node -p "require('$CS/lib/vscode/npm-shrinkwrap.json').packages['node_modules/@vscode/ripgrep'].version")"
  RG_PKG_DIR="$(mktemp -d)"
  ( cd "$RG_PKG_DIR" && npm pack --silent "@vscode/ripgrep@$RG_PKG_VERSION" >/dev/null && tar xzf ./*.tgz )
  RG_ASSET_VERSION="$(sed -n "s/^const VERSION = '\(.*\)';/\1/p" "$RG_PKG_DIR/package/lib/postinstall.js")"
  rm -rf "$RG_PKG_DIR"
  TMP_BASE="${TMPDIR:-/tmp}"
  RG_CACHE="$TMP_BASE/vscode-ripgrep-cache-$RG_PKG_VERSION"
  mkdir -p "$RG_CACHE"
  RG_TAR="$RG_CACHE/ripgrep-$RG_ASSET_VERSION-x86_64-unknown-linux-musl.tar.gz"
  RG_STAGE="$(mktemp -d)"
  cp "$(command -v rg)" "$RG_STAGE/rg"
  tar czf "$RG_TAR" -C "$RG_STAGE" rg
  rm -rf "$RG_STAGE"
  log "seeded $RG_TAR"
  # code-server's postinstall runs `npm install` in lib/vscode; npm 11 runs a dependency's
  # install scripts only when package.json allows them: allow the native modules VS Code needs.
  node -e "
    const fs = require('fs');
    const dir = '$CS/lib/vscode';
    const pkg = JSON.parse(fs.readFileSync(dir + '/package.json', 'utf8'));
    const lock = JSON.parse(fs.readFileSync(dir + '/npm-shrinkwrap.json', 'utf8'));
    pkg.allowScripts = {};
    for (const [key, entry] of Object.entries(lock.packages)) {
      if (entry.hasInstallScript) pkg.allowScripts[key.split('node_modules/').pop()] = true;
    }
    fs.writeFileSync(dir + '/package.json', JSON.stringify(pkg, null, 2));
  "
  log "code-server postinstall (builds VS Code's native modules)"
  ( cd "$CS" && npm_config_user_agent="npm/$(npm -v 2>/dev/null) node/$(node -v) linux x64" sh ./postinstall.sh )
  [ -x "$CS/lib/vscode/node_modules/@vscode/ripgrep/bin/rg" ] || { echo "e2e: rg missing after postinstall" >&2; exit 1; }
  touch "$DONE_MARK"
fi
CODE_SERVER="$E2E/node_modules/.bin/code-server"

# --- a private world for this run: workspace copy, user data, extensions, config
RUN_DIR="$(mktemp -d "${TMPDIR:-/tmp}/budgetlens-e2e.XXXXXX")"
CS_PID=""
cleanup() {
  # code-server runs in its own process group (setsid, below): end the group it leads, so
  # its extension host, file watcher and the language server go with it
  if [ -n "$CS_PID" ] && kill -0 -- "-$CS_PID" 2>/dev/null; then
    kill -- "-$CS_PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 -- "-$CS_PID" 2>/dev/null || break; sleep 0.1; done
    kill -9 -- "-$CS_PID" 2>/dev/null || true
  fi
  if [ "${E2E_KEEP:-0}" = 1 ]; then
    echo "e2e: kept $RUN_DIR"
  else
    rm -rf "$RUN_DIR"
  fi
}
trap cleanup EXIT

WS="$RUN_DIR/workspace"
mkdir -p "$WS" "$RUN_DIR/user/User" "$RUN_DIR/extensions" "$RUN_DIR/xdg-config" "$RUN_DIR/xdg-data"
cp -r "$ROOT/examples/." "$WS/"
# prompt files in their own formats (GitHub Models, Prompty), beside the pipelines
cp -r "$E2E/workspace/." "$WS/"
# The run starts with a broken interpreter setting (the extension must say how to fix it), then
# run.mjs points the setting at the repository's venv, the way a user fixes it.
node -e "
  const fs = require('fs');
  const s = JSON.parse(fs.readFileSync('$E2E/settings.json', 'utf8'));
  s['budgetlens.server.interpreter'] = '$RUN_DIR/no-such-python';
  fs.writeFileSync('$RUN_DIR/user/User/settings.json', JSON.stringify(s, null, 2));
"
export XDG_CONFIG_HOME="$RUN_DIR/xdg-config" XDG_DATA_HOME="$RUN_DIR/xdg-data"
printf 'bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n' > "$RUN_DIR/config.yaml"

log "installing the .vsix into code-server"
"$CODE_SERVER" --config "$RUN_DIR/config.yaml" --user-data-dir "$RUN_DIR/user" \
  --extensions-dir "$RUN_DIR/extensions" --install-extension "$VSIX" --force
ls "$RUN_DIR/extensions" | grep -q '^budgetlens\.budgetlens-' \
  || { echo "e2e: the extension is not in $RUN_DIR/extensions" >&2; exit 1; }

PORT="${E2E_PORT:-$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')}"
log "starting code-server on 127.0.0.1:$PORT"
PATH="$ROOT/.venv/bin:$PATH" setsid "$CODE_SERVER" --config "$RUN_DIR/config.yaml" \
  --bind-addr "127.0.0.1:$PORT" --auth none \
  --user-data-dir "$RUN_DIR/user" --extensions-dir "$RUN_DIR/extensions" \
  --disable-telemetry --disable-update-check --disable-workspace-trust \
  --disable-getting-started-override --ignore-last-opened \
  "$WS" > "$RUN_DIR/code-server.log" 2>&1 &
CS_PID=$!
# until code-server answers (up to 600 s, a hang guard: a busy machine starts it slowly)
for _ in $(seq 1 1200); do
  if python3 -c "import urllib.request as u; u.urlopen('http://127.0.0.1:$PORT/healthz', timeout=2)" 2>/dev/null; then break; fi
  kill -0 "$CS_PID" 2>/dev/null || { cat "$RUN_DIR/code-server.log" >&2; exit 1; }
  sleep 0.5
done

rm -rf "$ARTIFACTS"
mkdir -p "$ARTIFACTS"
log "driving the workbench in Chromium"
set +e
E2E_URL="http://127.0.0.1:$PORT/?folder=$WS" E2E_WORKSPACE="$WS" E2E_ARTIFACTS="$ARTIFACTS" \
  E2E_SETTINGS="$RUN_DIR/user/User/settings.json" E2E_PYTHON="$ROOT/.venv/bin/python" \
  node "$E2E/run.mjs"
status=$?
set -e
cp "$RUN_DIR/code-server.log" "$ARTIFACTS/code-server.log" 2>/dev/null || true
find "$RUN_DIR/user/logs" -name '*budgetlens*' -exec cp {} "$ARTIFACTS/" \; 2>/dev/null || true

log "the pipeline schema in yaml-language-server (the '# yaml-language-server: \$schema=' opt-in)"
set +e
node "$E2E/schema-optin.mjs" "$HERE/schemas/pipeline.schema.json" "$ROOT/examples"
schema_status=$?
set -e
[ $status -eq 0 ] && [ $schema_status -eq 0 ]
