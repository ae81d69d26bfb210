/**
 * Where the cut marker sits in the text returned by `budgetlens.showHierarchyContext`.
 *
 * The command's `cut.line/character` refer to the ORIGINAL document; the rendered hierarchy
 * context is a different text, so the decoration is placed by finding the marker in it.
 * Positions are VS Code's: 0-based lines, characters in UTF-16 code units (what JavaScript string
 * indices count), lines split at \r\n, \n or \r.
 */

export interface TextPosition {
  readonly line: number;
  readonly character: number;
}

export interface TextRange {
  readonly start: TextPosition;
  readonly end: TextPosition;
}

/** The position of UTF-16 offset `offset` in `text`. */
export function positionAt(text: string, offset: number): TextPosition {
  let line = 0;
  let lineStart = 0;
  const end = Math.min(Math.max(offset, 0), text.length);
  for (let i = 0; i < end; i++) {
    const ch = text.charCodeAt(i);
    if (ch === 0x0a /* \n */) {
      line++;
      lineStart = i + 1;
    } else if (ch === 0x0d /* \r */) {
      if (i + 1 < text.length && text.charCodeAt(i + 1) === 0x0a) {
        if (i + 1 >= end) {
          // the offset sits between \r and \n: still on this line
          break;
        }
        i++;
      }
      line++;
      lineStart = i + 1;
    }
  }
  return { line, character: end - lineStart };
}

/**
 * The range of the cut marker in `text`, or null when it is absent.
 *
 * Nothing of the source exists after the cut, so only closing structure follows the real marker;
 * when the marker string also occurs earlier (inside a value), the LAST occurrence is the cut.
 */
export function cutMarkerRange(text: string, marker: string): TextRange | null {
  if (marker === '') {
    return null;
  }
  const at = text.lastIndexOf(marker);
  if (at < 0) {
    return null;
  }
  return { start: positionAt(text, at), end: positionAt(text, at + marker.length) };
}
