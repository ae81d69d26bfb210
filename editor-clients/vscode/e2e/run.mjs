// The budgetlens extension in real VS Code (code-server), driven in Debian's Chromium.
//
// Started by ../scripts/e2e.sh, which installs everything, copies examples/ to a temporary
// workspace, installs the .vsix and starts code-server. Environment:
//   E2E_URL        the workbench URL (with ?folder=<workspace>)
//   E2E_WORKSPACE  the workspace folder on disk (this script reads files there to check edits)
//   E2E_ARTIFACTS  where screenshots and the result summary go
//   E2E_SETTINGS   the user settings.json (starts with a broken budgetlens.server.interpreter)
//   E2E_PYTHON     a Python with budgetlens installed (the fix this script applies)
//   E2E_ONLY       optional regular expression: run only the checks whose names match it
//                  (the three set-up checks, up to the server starting, always run)
//
// Each check is what a user would see. It ends with a line "N passed, N failed" and exits 1
// when anything failed.
import { strict as assert } from 'node:assert';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const URL_ = required('E2E_URL');
const WORKSPACE = required('E2E_WORKSPACE');
const ARTIFACTS = required('E2E_ARTIFACTS');
const SETTINGS = required('E2E_SETTINGS');
const PYTHON = required('E2E_PYTHON');
const CHROMIUM = process.env.E2E_CHROMIUM ?? '/usr/bin/chromium';
// Every wait is for an event; its bound is a hang guard only, so that a busy machine (the
// tests run under scripts/cpu_hog.py too) never fails a check that is right.
const WAIT_MS = Number(process.env.E2E_WAIT_MS ?? 120_000);
const SERVER_WAIT_MS = WAIT_MS;

const ONLY = process.env.E2E_ONLY ? new RegExp(process.env.E2E_ONLY, 'i') : null;
const SETUP_CHECKS = 3;

const OVER_BUDGET_PIPELINE = 'pipelines/long_report.yaml';
// prompt files in their own formats, copied from e2e/workspace/ by e2e.sh; none sets an
// output limit, so each gets BL070 (a warning) and a per-variable headroom lens (BL079)
const PROMPT_FILES = [
  { file: 'prompt-files/bugs.prompt.yml', variable: 'input' },
  { file: 'prompt-files/support.prompty', variable: 'question' },
];
const CUT_JSON = 'responses/truncated.json';
const CUT_MARKER = '<<<CUT>>>';

function required(name) {
  const value = process.env[name];
  if (!value) {
    console.error(`e2e: ${name} is not set; run editor-clients/vscode/scripts/e2e.sh`);
    process.exit(2);
  }
  return value;
}

mkdirSync(ARTIFACTS, { recursive: true });
const results = [];
let shot = 0;

async function screenshot(page, name) {
  shot += 1;
  const file = join(ARTIFACTS, `${String(shot).padStart(2, '0')}-${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

async function check(page, name, fn) {
  if (ONLY && results.length >= SETUP_CHECKS && !ONLY.test(name)) {
    results.push({ name, ok: true, skipped: true, ms: 0 });
    console.log(`skip ${name}`);
    return;
  }
  const started = Date.now();
  try {
    await fn();
    results.push({ name, ok: true, ms: Date.now() - started });
    console.log(`ok   ${name} (${Date.now() - started} ms)`);
  } catch (error) {
    results.push({ name, ok: false, ms: Date.now() - started, error: String(error?.stack ?? error) });
    console.log(`FAIL ${name}: ${error?.message ?? error}`);
  } finally {
    await screenshot(page, name.replace(/[^a-z0-9]+/gi, '-').toLowerCase()).catch(() => {});
  }
}

/** Polls `fn` until it returns a truthy value or `ms` pass; returns that value. */
async function until(what, fn, ms = WAIT_MS, every = 250) {
  const deadline = Date.now() + ms;
  let last;
  for (;;) {
    try {
      last = await fn();
      if (last) {
        return last;
      }
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${ms} ms waiting for ${what} (last: ${String(last)})`);
    }
    await new Promise((r) => setTimeout(r, every));
  }
}

const text = (s) => (s ?? '').replace(/\u00a0/g, ' ');

/** The active editor group's editor (the one with focus, else the first visible). */
function activeEditor(page) {
  return page.locator('.editor-group-container.active .monaco-editor').first();
}

async function runCommand(page, title) {
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(`>${title}`);
  const row = page.locator('.quick-input-list .monaco-list-row', { hasText: title }).first();
  await row.waitFor({ state: 'visible', timeout: WAIT_MS });
  await page.keyboard.press('Enter');
  await page.locator('.quick-input-widget').waitFor({ state: 'hidden', timeout: 10_000 }).catch(() => {});
}

async function openFile(page, relPath) {
  // F1 opens the quick input in command mode; without the leading '>' it is Go to File.
  await page.keyboard.press('F1');
  const input = page.locator('.quick-input-widget input');
  await input.waitFor({ state: 'visible' });
  await input.fill(relPath);
  const base = relPath.split('/').pop();
  await page.locator('.quick-input-list .monaco-list-row', { hasText: base }).first().waitFor({ timeout: WAIT_MS });
  await page.keyboard.press('Enter');
  await until(`the tab of ${base}`, async () =>
    (await page.locator('.tabs-container .tab.active', { hasText: base }).count()) > 0);
  await activeEditor(page).locator('.view-lines').waitFor();
}

async function editorLines(page) {
  return text(await activeEditor(page).locator('.view-lines').innerText());
}

async function notifications(page) {
  const toasts = page.locator('.notifications-toasts .notification-list-item-message');
  const n = await toasts.count();
  const out = [];
  for (let i = 0; i < n; i++) {
    out.push(text(await toasts.nth(i).innerText()));
  }
  return out;
}

const browser = await chromium.launch({
  executablePath: CHROMIUM,
  headless: true,
  args: [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
  ],
});
const context = await browser.newContext({ viewport: { width: 1600, height: 1000 } });
const page = await context.newPage();
page.setDefaultTimeout(WAIT_MS);
const consoleErrors = [];
page.on('console', (msg) => {
  if (msg.type() === 'error') {
    consoleErrors.push(msg.text());
  }
});

try {
  await check(page, 'workbench loads with the examples workspace', async () => {
    await page.goto(URL_, { waitUntil: 'domcontentloaded' });
    await page.locator('.monaco-workbench').waitFor({ timeout: WAIT_MS });
    await page.locator('.explorer-folders-view .monaco-list-row', { hasText: 'pipelines' }).first()
      .waitFor({ timeout: WAIT_MS });
  });

  await check(page, 'a broken server setting gives a notification that says how to fix it', async () => {
    const toast = await until('the budgetlens notification', async () =>
      (await notifications(page)).find((t) => t.includes('budgetlens')));
    assert.match(toast, /budgetlens\.server\.interpreter ".*no-such-python" does not work/);
    assert.match(toast, /pip install \/path\/to\/budgetlens/);
  });

  await check(page, 'fixing the setting in settings.json starts the server', async () => {
    // close the notification so it does not cover the editor
    await page.locator('.notifications-toasts .codicon-notifications-clear').first().click().catch(() => {});
    await runCommand(page, 'Preferences: Open User Settings (JSON)');
    await until('settings.json in the editor', async () =>
      (await page.locator('.tabs-container .tab.active', { hasText: 'settings.json' }).count()) > 0);
    const broken = JSON.parse(readFileSync(SETTINGS, 'utf8'))['budgetlens.server.interpreter'];
    // Find/Replace the broken path with the venv's python, then save.
    await activeEditor(page).locator('.view-lines').click();
    await page.keyboard.press('Control+H');
    const find = page.locator('.find-widget.visible .find-part .input').first();
    const replace = page.locator('.find-widget.visible .replace-part .input').first();
    await find.fill(broken);
    await replace.fill(PYTHON);
    await until('a match', async () =>
      /1 of 1/.test(text(await page.locator('.find-widget.visible .matchesCount').innerText())));
    await replace.focus();
    await page.keyboard.press('Control+Alt+Enter');
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+S');
    await until('settings.json saved with the interpreter', async () =>
      JSON.parse(readFileSync(SETTINGS, 'utf8'))['budgetlens.server.interpreter'] === PYTHON);
  });

  await check(page, 'over-budget pipeline shows an error squiggle', async () => {
    await openFile(page, OVER_BUDGET_PIPELINE);
    await until('an error squiggle from budgetlens', async () =>
      (await activeEditor(page).locator('.squiggly-error').count()) > 0, SERVER_WAIT_MS);
  });

  await check(page, 'the Problems panel lists the budget error', async () => {
    await page.keyboard.press('Control+Shift+M');
    const rows = page.locator('.markers-panel .monaco-list-row');
    const row = await until('a budgetlens row in Problems', async () => {
      const n = await rows.count();
      for (let i = 0; i < n; i++) {
        const t = text(await rows.nth(i).innerText());
        if (/BL0\d\d/.test(t) && /8,?192|over|exceed/i.test(t)) {
          return t;
        }
      }
      return null;
    });
    console.log(`     Problems: ${row.replace(/\s+/g, ' ')}`);
  });

  await check(page, 'a code lens shows the step budget as a sum', async () => {
    // VS Code fetches code lenses for the focused editor (leaving it for the Problems panel
    // cancels a pending fetch): back in the editor, as a user reading the pipeline is.
    await activeEditor(page).locator('.view-lines').click();
    const lens = await until('a budget code lens', async () => {
      const lenses = activeEditor(page).locator('.codelens-decoration');
      const n = await lenses.count();
      for (let i = 0; i < n; i++) {
        const t = text(await lenses.nth(i).innerText());
        if (/=\s*[\d,]+\s*\/\s*8,?192/.test(t)) {
          return t;
        }
      }
      return null;
    });
    assert.match(lens, /over|free/);
    console.log(`     lens: ${lens}`);
  });

  await check(page, 'clicking a step lens opens the budget report beside it', async () => {
    const lens = activeEditor(page).locator('.codelens-decoration a', { hasText: /\/\s*8,?192/ }).first();
    await lens.click();
    const tab = page.locator('.tabs-container .tab', { hasText: 'budget report' }).first();
    await tab.waitFor({ timeout: WAIT_MS });
    const report = await until('the report text', async () => {
      const t = text(await activeEditor(page).locator('.view-lines').innerText());
      return t.includes('write_report') ? t : null;
    });
    assert.match(report, /window 8,?192/);
    // back to the pipeline, in the first group
    await page.keyboard.press('Control+1');
    await until('the pipeline editor active again', async () =>
      (await page.locator('.editor-group-container.active .tabs-container .tab.active', { hasText: 'long_report.yaml' }).count()) > 0);
  });

  const before = readFileSync(join(WORKSPACE, OVER_BUDGET_PIPELINE), 'utf8');
  await check(page, 'Ctrl+. quick-fix clamps the number and the squiggle goes', async () => {
    const editor = activeEditor(page);
    // Put the cursor on the squiggled number: F8 goes to the next problem.
    await editor.locator('.view-lines').click();
    await page.keyboard.press('Control+Home');
    await page.keyboard.press('F8');
    await page.locator('.marker-widget').waitFor({ timeout: WAIT_MS });
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+.');
    const fix = page.locator('.action-widget .monaco-list-row.action', { hasText: /clamp max_context_tokens/i }).first();
    await fix.waitFor({ timeout: WAIT_MS });
    console.log(`     quick-fix: ${text(await fix.innerText()).replace(/\s+/g, ' ')}`);
    // Choose it with the keyboard, as a user does: arrow down to it, Enter.
    const focused = page.locator('.action-widget .monaco-list-row.action.focused');
    for (let i = 0; i < 10; i++) {
      if (/clamp max_context_tokens/i.test(text(await focused.innerText().catch(() => '')))) {
        break;
      }
      await page.keyboard.press('ArrowDown');
    }
    assert.match(text(await focused.innerText()), /clamp max_context_tokens/i);
    await page.keyboard.press('Enter');
    await until('the squiggle to go', async () =>
      (await editor.locator('.squiggly-error').count()) === 0, SERVER_WAIT_MS);
    await page.keyboard.press('Control+S');
    const after = await until('the clamped file on disk', async () => {
      const t = readFileSync(join(WORKSPACE, OVER_BUDGET_PIPELINE), 'utf8');
      return t !== before ? t : null;
    });
    const num = (t) => Number(/max_context_tokens:\s*(\d+)/.exec(t)?.[1]);
    assert.ok(num(after) < num(before), `max_context_tokens ${num(before)} -> ${num(after)}`);
    // Only that number changed: every other line is as it was.
    const a = before.split('\n');
    const b = after.split('\n');
    assert.equal(a.length, b.length);
    const changed = a.map((line, i) => (line === b[i] ? null : i)).filter((i) => i !== null);
    assert.equal(changed.length, 1, `changed lines: ${changed}`);
    console.log(`     clamped: ${a[changed[0]].trim()} -> ${b[changed[0]].trim()}`);
  });

  await check(page, 'Show Hierarchy Context opens the marked text beside the cut JSON', async () => {
    await openFile(page, CUT_JSON);
    await runCommand(page, 'budgetlens: Show Hierarchy Context');
    const tab = page.locator('.tabs-container .tab', { hasText: 'hierarchy context' }).first();
    await tab.waitFor({ timeout: WAIT_MS });
    const groups = await page.locator('.editor-group-container').count();
    assert.ok(groups >= 2, `expected the view beside the JSON (editor groups: ${groups})`);
    const view = activeEditor(page);
    const shown = await until('the marker in the view', async () => {
      const t = text(await view.locator('.view-lines').innerText());
      return t.includes(CUT_MARKER) ? t : null;
    });
    assert.match(shown, /content/);
    // read-only: typing does not change it
    await page.keyboard.type('xyz');
    assert.ok(!text(await view.locator('.view-lines').innerText()).includes('xyz'), 'the view is editable');
    // the cursor sits on the marker's line and the cut decoration is drawn there
    // the cursor was put on the marker: the rendered line at the current-line highlight's
    // height holds the marker
    const cursorLine = await until('the cursor on the marker line', async () => {
      const top = await view.locator('.view-overlays .current-line').first().evaluate((el) => el.parentElement.style.top || el.style.top);
      const lines = view.locator('.view-lines .view-line');
      const n = await lines.count();
      for (let i = 0; i < n; i++) {
        if ((await lines.nth(i).evaluate((el) => el.style.top)) === top) {
          const t = text(await lines.nth(i).innerText());
          return t.includes(CUT_MARKER) ? t : null;
        }
      }
      return null;
    });
    console.log(`     cursor line: ${cursorLine.trim()}`);
    const deco = await until('the cut decoration', async () =>
      (await view.locator('.view-lines [class*="ced-"], .view-overlays [class*="ced-"]').count()) > 0);
    assert.ok(deco);
  });

  await check(page, 'Clamp All Budgets clamps the pipeline again after an undo', async () => {
    await page.keyboard.press('Control+1');
    await openFile(page, OVER_BUDGET_PIPELINE);
    const editor = activeEditor(page);
    const clamped = readFileSync(join(WORKSPACE, OVER_BUDGET_PIPELINE), 'utf8');
    await editor.locator('.view-lines').click();
    await page.keyboard.press('Control+Z');
    await until('6144 back in the editor', async () => (await editorLines(page)).includes('max_context_tokens: 6144'));
    await until('the squiggle to come back', async () =>
      (await editor.locator('.squiggly-error').count()) > 0, SERVER_WAIT_MS);
    await runCommand(page, 'budgetlens: Clamp All Budgets');
    await until('the squiggle to go', async () =>
      (await editor.locator('.squiggly-error').count()) === 0, SERVER_WAIT_MS);
    const toast = await until('the clamp notification', async () =>
      (await notifications(page)).find((t) => t.startsWith('budgetlens: clamped')));
    console.log(`     notification: ${toast}`);
    await page.keyboard.press('Control+S');
    // the whole plan for this pipeline is the one change the quick-fix made
    await until('the file saved as the quick-fix left it', async () =>
      readFileSync(join(WORKSPACE, OVER_BUDGET_PIPELINE), 'utf8') === clamped);
  });

  await check(page, 'the status bar shows a prompt file token count and tokenizer', async () => {
    await openFile(page, 'prompts/report.txt');
    const item = await until('the budgetlens status item', async () => {
      const items = page.locator('.statusbar-item', { hasText: /tokens · / });
      return (await items.count()) > 0 ? text(await items.first().innerText()) : null;
    });
    assert.match(item, /[\d,]+ tokens · cl100k_base/);
    console.log(`     status: ${item}`);
  });

  for (const { file, variable } of PROMPT_FILES) {
    const base = file.split('/').pop();
    await check(page, `prompt file ${base} shows the BL070 warning and its variable's lens`, async () => {
      await openFile(page, file);
      const editor = activeEditor(page);
      await until('a warning squiggle from budgetlens', async () =>
        (await editor.locator('.squiggly-warning').count()) > 0, SERVER_WAIT_MS);
      // the squiggle is BL070's: Alt+F8 (next problem in this file; F8 may go on to
      // another file) shows each problem of the file in turn, BL079's lens text among them
      await editor.locator('.view-lines').click();
      const marker = editor.locator('.marker-widget');
      let message = '';
      for (let i = 0; i < 4 && !/BL070/.test(message); i++) {
        await page.keyboard.press('Alt+F8');
        await marker.waitFor({ timeout: WAIT_MS });
        message = text(await marker.innerText());
      }
      assert.match(message, /BL070/);
      assert.match(message, /no output limit/);
      console.log(`     ${base}: ${message.replace(/\s+/g, ' ').slice(0, 160)}`);
      await page.keyboard.press('Escape');
      assert.equal(await page.locator('.editor-group-container.active .tabs-container .tab.active', { hasText: base }).count(), 1);
      // lenses are fetched for the focused editor: back in it, as a user reading the file
      await editor.locator('.view-lines').click();
      const want = new RegExp(`\\{\\{${variable}\\}\\}: up to [\\d,]+ tokens on gpt-4o-mini with 16,384 output`);
      const lens = await until(`the {{${variable}}} headroom lens`, async () => {
        const lenses = editor.locator('.codelens-decoration');
        const n = await lenses.count();
        for (let i = 0; i < n; i++) {
          const t = text(await lenses.nth(i).innerText());
          if (want.test(t)) {
            return t;
          }
        }
        return null;
      });
      console.log(`     lens: ${lens}`);
    });
  }
} finally {
  const toasts = await notifications(page).catch(() => []);
  const failed = results.filter((r) => !r.ok).length;
  const skipped = results.filter((r) => r.skipped).length;
  writeFileSync(join(ARTIFACTS, 'results.json'), JSON.stringify({ results, notifications: toasts, consoleErrors: consoleErrors.slice(0, 50) }, null, 2));
  if (toasts.length) {
    console.log(`notifications: ${toasts.join(' | ')}`);
  }
  await browser.close();
  console.log(`vscode-e2e: ${results.length - failed - skipped} passed, ${failed} failed`
    + (skipped ? `, ${skipped} skipped (E2E_ONLY)` : ''));
  process.exitCode = failed ? 1 : 0;
}
