// The pipeline JSON Schema in the real YAML language server (yaml-language-server, the engine of
// Red Hat's YAML extension): a pipeline that opts in with
//   # yaml-language-server: $schema=<relative path of pipeline.schema.json>
// gets schema diagnostics for a wrong value and none when it is valid, and completion offers
// the budget keys with their descriptions.
//
// Usage: node schema-optin.mjs <schema file> <workspace folder with pipelines/> (run by
// ../scripts/e2e.sh). Ends with "N passed, N failed"; exit 1 when anything failed.
import { strict as assert } from 'node:assert';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import * as rpc from 'vscode-jsonrpc/node.js';

const [schemaFile, examples] = process.argv.slice(2);
if (!schemaFile || !examples) {
  console.error('usage: node schema-optin.mjs <pipeline.schema.json> <examples folder>');
  process.exit(2);
}

const require = createRequire(import.meta.url);
const serverMain = require.resolve('yaml-language-server/bin/yaml-language-server');

const root = mkdtempSync(join(tmpdir(), 'budgetlens-schema-'));
const pipelines = join(root, 'pipelines');
const schemaCopy = join(root, 'pipeline.schema.json');
copyFileSync(schemaFile, schemaCopy);

const child = spawn(process.execPath, [serverMain, '--stdio'], { stdio: ['pipe', 'pipe', 'inherit'] });
// The server exits on `exit`; a write racing with that must not crash this script.
child.stdin.on('error', () => {});
const exited = new Promise((resolve) => child.once('exit', resolve));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const conn = rpc.createMessageConnection(
  new rpc.StreamMessageReader(child.stdout),
  new rpc.StreamMessageWriter(child.stdin),
);
const published = new Map();
const waiters = [];
conn.onNotification('textDocument/publishDiagnostics', (params) => {
  published.set(params.uri, params.diagnostics);
  for (const w of waiters.splice(0)) {
    w();
  }
});
conn.onRequest('workspace/configuration', (params) =>
  params.items.map((item) => (item.section === 'yaml' ? { validate: true, completion: true, hover: true, schemas: {} } : null)));
conn.onRequest('client/registerCapability', () => null);
conn.onRequest('window/workDoneProgress/create', () => null);
conn.onNotification(() => {});
conn.listen();

// a hang guard only: the tests run on a busy machine too (scripts/cpu_hog.py)
async function diagnosticsFor(uri, ms = Number(process.env.E2E_WAIT_MS ?? 120_000)) {
  const deadline = Date.now() + ms;
  while (!published.has(uri)) {
    if (Date.now() > deadline) {
      throw new Error(`no diagnostics for ${uri} within ${ms} ms`);
    }
    await new Promise((resolve) => {
      waiters.push(resolve);
      setTimeout(resolve, 250);
    });
  }
  return published.get(uri);
}

let version = 0;
function open(name, textWithoutHeader) {
  const file = join(pipelines, name);
  const header = `# yaml-language-server: $schema=${relative(dirname(file), schemaCopy)}\n`;
  const text = header + textWithoutHeader;
  writeFileSync(file, text);
  const uri = pathToFileURL(file).href;
  published.delete(uri);
  conn.sendNotification('textDocument/didOpen', { textDocument: { uri, languageId: 'yaml', version: ++version, text } });
  return { uri, text };
}

const results = [];
async function check(name, fn) {
  try {
    await fn();
    results.push(true);
    console.log(`ok   ${name}`);
  } catch (error) {
    results.push(false);
    console.log(`FAIL ${name}: ${error?.message ?? error}`);
  }
}

try {
  // a workspace with a pipelines/ folder and the schema copy at its root
  mkdirSync(pipelines, { recursive: true });
  await conn.sendRequest('initialize', {
    processId: process.pid,
    rootUri: pathToFileURL(root).href,
    workspaceFolders: [{ uri: pathToFileURL(root).href, name: 'ws' }],
    capabilities: {
      workspace: { configuration: true },
      textDocument: {
        publishDiagnostics: {},
        completion: { completionItem: { documentationFormat: ['markdown', 'plaintext'] } },
      },
    },
  });
  conn.sendNotification('initialized', {});
  conn.sendNotification('workspace/didChangeConfiguration', { settings: { yaml: { validate: true, completion: true } } });

  await check('every example pipeline is valid under the opt-in schema', async () => {
    const names = readdirSync(join(examples, 'pipelines')).filter((n) => n.endsWith('.yaml'));
    assert.ok(names.length > 0, 'no example pipelines');
    for (const name of names) {
      const { uri } = open(name, readFileSync(join(examples, 'pipelines', name), 'utf8'));
      const diags = await diagnosticsFor(uri);
      assert.deepEqual(diags.map((d) => d.message), [], name);
    }
  });

  await check('a wrong value gets a schema diagnostic on that value', async () => {
    const body = 'settings:\n  max_context_tokens: lots\nsteps:\n  - id: a\n    type: call_model\n    max_output_tokens: 0\n';
    const { uri } = open('bad.yaml', body);
    const diags = await diagnosticsFor(uri);
    const lines = diags.map((d) => d.range.start.line).sort();
    // line 0 is the opt-in comment: `max_context_tokens: lots` is line 2, `max_output_tokens: 0` line 6
    assert.deepEqual(lines, [2, 6], JSON.stringify(diags.map((d) => [d.range.start.line, d.message])));
    console.log(`     ${diags.map((d) => `line ${d.range.start.line + 1}: ${d.message.replace(/\s+/g, ' ')}`).join(' | ')}`);
  });

  await check('completion under settings offers the budget keys with descriptions', async () => {
    const { uri } = open('complete.yaml', 'settings:\n  \n');
    await diagnosticsFor(uri);
    const result = await conn.sendRequest('textDocument/completion', {
      textDocument: { uri },
      position: { line: 2, character: 2 },
    });
    const items = Array.isArray(result) ? result : result.items;
    const labels = items.map((i) => i.label);
    for (const key of ['max_context_tokens', 'max_history_tokens', 'budget_safety_margin_tokens']) {
      assert.ok(labels.includes(key), `${key} not in ${labels.join(', ')}`);
    }
    const ctx = items.find((i) => i.label === 'max_context_tokens');
    const doc = typeof ctx.documentation === 'string' ? ctx.documentation : ctx.documentation?.value ?? '';
    assert.match(doc, /retrieved context/);
  });

  await check('completion in a step offers its request terms with descriptions', async () => {
    const { uri } = open('terms.yaml', 'steps:\n  - id: a\n    type: call_model\n    \n');
    await diagnosticsFor(uri);
    const result = await conn.sendRequest('textDocument/completion', {
      textDocument: { uri },
      position: { line: 4, character: 4 },
    });
    const items = Array.isArray(result) ? result : result.items;
    const labels = items.map((i) => i.label);
    for (const key of ['tools', 'response_schema', 'reasoning']) {
      assert.ok(labels.includes(key), `${key} not in ${labels.join(', ')}`);
    }
    const reasoning = items.find((i) => i.label === 'reasoning');
    const doc = typeof reasoning.documentation === 'string' ? reasoning.documentation : reasoning.documentation?.value ?? '';
    assert.match(doc, /Thinking budget/);
  });
} finally {
  await Promise.race([conn.sendRequest('shutdown').catch(() => {}), sleep(5000)]);
  await Promise.resolve(conn.sendNotification('exit')).catch(() => {});
  await Promise.race([exited, sleep(5000)]);
  if (child.exitCode === null && child.signalCode === null) {
    child.kill();
  }
  conn.dispose();
  rmSync(root, { recursive: true, force: true });
  const failed = results.filter((r) => !r).length;
  console.log(`schema-optin: ${results.length - failed} passed, ${failed} failed`);
  process.exitCode = failed ? 1 : 0;
}
