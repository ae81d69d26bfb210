import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { cutMarkerRange, positionAt } from '../src/cutMarker';

const M = '<<<CUT>>>';

describe('cutMarkerRange', () => {
  it('finds the marker on a later line', () => {
    const text = '{\n  "document": {\n    "title": "Q3",\n    "body": "The quick<<<CUT>>>"\n  }\n}';
    // line 3 is `    "body": "The quick<<<CUT>>>"`; the marker starts after 4 + 8 + 10 = 22 characters
    assert.deepEqual(cutMarkerRange(text, M), {
      start: { line: 3, character: 22 },
      end: { line: 3, character: 31 },
    });
  });

  it('counts UTF-16 code units: an emoji before the marker is two', () => {
    const text = '{"a": "😀é<<<CUT>>>"}';
    // {"a": "  = 7 code units, 😀 = 2, é = 1
    assert.deepEqual(cutMarkerRange(text, M), {
      start: { line: 0, character: 10 },
      end: { line: 0, character: 19 },
    });
  });

  it('splits lines at CRLF and lone CR like VS Code', () => {
    const text = 'a\r\nb\rc\n  x<<<CUT>>>';
    assert.deepEqual(cutMarkerRange(text, M), {
      start: { line: 3, character: 3 },
      end: { line: 3, character: 12 },
    });
  });

  it('takes the last occurrence: the marker text may also appear inside a value', () => {
    const text = '{"note": "<<<CUT>>> is the marker",\n "tail": "abc<<<CUT>>>"}';
    assert.deepEqual(cutMarkerRange(text, M)?.start, { line: 1, character: 13 });
  });

  it('returns null when the marker is absent or empty', () => {
    assert.equal(cutMarkerRange('{"a": 1}', M), null);
    assert.equal(cutMarkerRange('{"a": 1}', ''), null);
  });

  it('handles a custom marker that spans lines', () => {
    const text = 'x\n[cut\nhere]';
    assert.deepEqual(cutMarkerRange(text, '[cut\nhere]'), {
      start: { line: 1, character: 0 },
      end: { line: 2, character: 5 },
    });
  });
});

describe('positionAt', () => {
  it('keeps an offset between \\r and \\n on the first line', () => {
    assert.deepEqual(positionAt('ab\r\ncd', 3), { line: 0, character: 3 });
    assert.deepEqual(positionAt('ab\r\ncd', 4), { line: 1, character: 0 });
  });

  it('clamps offsets outside the text', () => {
    assert.deepEqual(positionAt('ab\ncd', 99), { line: 1, character: 2 });
    assert.deepEqual(positionAt('ab', -5), { line: 0, character: 0 });
  });
});
