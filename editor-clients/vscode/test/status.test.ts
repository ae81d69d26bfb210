import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { serverSettings } from '../src/settings';
import { parsePromptLensTitle, statusBarText } from '../src/status';

describe('parsePromptLensTitle', () => {
  it('reads the count and tokenizer of a prompt-file lens', () => {
    assert.deepEqual(parsePromptLensTitle('186 tokens (cl100k_base) · used by 2 steps in 2 pipelines'), {
      tokens: 186,
      tokenizer: 'cl100k_base',
    });
    assert.deepEqual(parsePromptLensTitle('1,204 tokens (o200k_base) · unused'), { tokens: 1204, tokenizer: 'o200k_base' });
    assert.deepEqual(parsePromptLensTitle('1 token (cl100k_base)'), { tokens: 1, tokenizer: 'cl100k_base' });
  });

  it('rejects other lenses', () => {
    assert.equal(parsePromptLensTitle('fixed 193 + history 600 + context 2000 = 4393 / 4096 (297 over)'), null);
    assert.equal(parsePromptLensTitle('tightest step: summarize (12 free)'), null);
    assert.equal(parsePromptLensTitle(''), null);
  });
});

describe('statusBarText', () => {
  it('groups thousands and names the tokenizer', () => {
    assert.equal(statusBarText({ tokens: 1234567, tokenizer: 'cl100k_base' }), '1,234,567 tokens · cl100k_base');
    assert.equal(statusBarText({ tokens: 186, tokenizer: 'o200k_base' }), '186 tokens · o200k_base');
    assert.equal(statusBarText({ tokens: 1, tokenizer: 'gpt-4o' }), '1 token · gpt-4o');
  });
});

describe('serverSettings', () => {
  it('drops the client-only server.* and trace.* keys and keeps the rest as plain JSON', () => {
    const section = {
      server: { command: ['x'], interpreter: null },
      trace: { server: 'verbose' },
      policy: 'auto_clamp',
      tokenizer: null,
      hierarchyBudget: 500,
      diagnostics: { pipelines: true, prompts: false, truncatedJson: true },
      has: () => true,
    };
    assert.deepEqual(serverSettings(section), {
      policy: 'auto_clamp',
      tokenizer: null,
      hierarchyBudget: 500,
      diagnostics: { pipelines: true, prompts: false, truncatedJson: true },
    });
  });
});
