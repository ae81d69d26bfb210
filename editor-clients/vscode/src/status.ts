/**
 * The status bar text for a prompt file, from the server's prompt-file code lens.
 *
 * The server puts a lens at the top of a prompt file titled like
 * `186 tokens (cl100k_base) · used by 2 steps in 2 pipelines`; the status bar shows the count and
 * the tokenizer of the active prompt file.
 */

export interface PromptTokens {
  readonly tokens: number;
  readonly tokenizer: string;
}

const LENS_TITLE = /^\s*([\d][\d,_ ]*)\s+tokens?\s+\(([^)]+)\)/;

/** Parses a prompt-file lens title; null when the title is not one. */
export function parsePromptLensTitle(title: string): PromptTokens | null {
  const m = LENS_TITLE.exec(title);
  if (!m) {
    return null;
  }
  const tokens = Number(m[1].replace(/[,_ ]/g, ''));
  if (!Number.isSafeInteger(tokens)) {
    return null;
  }
  return { tokens, tokenizer: m[2].trim() };
}

/** `1,204 tokens · cl100k_base` (thousands grouped, en-US style, independent of locale). */
export function statusBarText(info: PromptTokens): string {
  const grouped = String(info.tokens).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  return `${grouped} ${info.tokens === 1 ? 'token' : 'tokens'} · ${info.tokenizer}`;
}
