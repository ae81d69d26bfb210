/**
 * Which command starts the budgetlens language server.
 *
 * Pure: no `vscode` import, no process spawning. The extension passes in the settings, the Python
 * extension's interpreter and two effects (a PATH lookup and a probe that runs a command), so every
 * branch is unit-tested with fakes.
 *
 * Order, first match wins:
 *  1. `budgetlens.server.command` (an array: program and arguments), used as given;
 *  2. `budgetlens.server.interpreter`: `<python> -m budgetlens_lsp serve`;
 *  3. the Python extension's active interpreter, when budgetlens is importable there;
 *  4. `budgetlens serve` from PATH.
 * The two settings are explicit choices: when one is set and does not work, the extension says so
 * instead of silently starting some other server. The two automatic sources fall through.
 */

export const INSTALL_HINT =
  'Install the budgetlens Python package from its checkout with `pip install /path/to/budgetlens` ' +
  '(in the environment the Python extension uses, or anywhere on PATH), or point the setting `budgetlens.server.command` at it, e.g. ' +
  '["/path/to/venv/bin/budgetlens", "serve"].';

export type CandidateSource = 'setting:command' | 'setting:interpreter' | 'python-extension' | 'path';

export interface ProcessSpec {
  readonly command: string;
  readonly args: readonly string[];
}

export interface Candidate {
  readonly source: CandidateSource;
  /** How the server is started. */
  readonly run: ProcessSpec;
  /** A quick command that exits 0 when `run` can work (null: trust it, nothing cheaper to try). */
  readonly probe: ProcessSpec | null;
  /** Whether a failure stops the search (an explicit setting) or falls through (auto-detected). */
  readonly explicit: boolean;
  readonly label: string;
}

export interface ServerSettingsInput {
  /** Raw value of `budgetlens.server.command` (validated here: settings are user input). */
  readonly command?: unknown;
  /** Raw value of `budgetlens.server.interpreter`. */
  readonly interpreter?: unknown;
}

export interface CandidateList {
  readonly candidates: readonly Candidate[];
  /** Settings that were present but unusable, in words for the user. */
  readonly problems: readonly string[];
}

const PROBE_IMPORT = 'import budgetlens_lsp';

function interpreterCandidate(
  source: 'setting:interpreter' | 'python-extension',
  python: readonly string[],
  explicit: boolean,
  label: string,
): Candidate {
  const [program, ...pre] = python;
  return {
    source,
    run: { command: program, args: [...pre, '-m', 'budgetlens_lsp', 'serve'] },
    probe: { command: program, args: [...pre, '-c', PROBE_IMPORT] },
    explicit,
    label,
  };
}

/**
 * The ordered server candidates for these settings.
 *
 * @param pythonExtensionInterpreter the Python extension's active interpreter as an argv prefix
 *   (e.g. `["/home/me/.venv/bin/python"]`), or undefined when there is none.
 * @param lookupOnPath resolves a program name to an executable path on PATH, or undefined.
 */
export function serverCandidates(
  settings: ServerSettingsInput,
  pythonExtensionInterpreter: readonly string[] | undefined,
  lookupOnPath: (name: string) => string | undefined,
): CandidateList {
  const problems: string[] = [];
  const candidates: Candidate[] = [];

  const cmd = settings.command;
  if (cmd !== undefined && cmd !== null && !(Array.isArray(cmd) && cmd.length === 0)) {
    if (Array.isArray(cmd) && cmd.every((part) => typeof part === 'string' && part.trim() !== '')) {
      const [program, ...args] = cmd as string[];
      candidates.push({
        source: 'setting:command',
        run: { command: program, args },
        probe: null,
        explicit: true,
        label: `budgetlens.server.command ${JSON.stringify(cmd)}`,
      });
      return { candidates, problems };
    }
    problems.push(
      'The setting `budgetlens.server.command` must be an array of non-empty strings ' +
        `(program first, e.g. ["budgetlens", "serve"]); got ${JSON.stringify(cmd)}. It is ignored.`,
    );
  }

  const interp = settings.interpreter;
  if (interp !== undefined && interp !== null && interp !== '') {
    if (typeof interp === 'string' && interp.trim() !== '') {
      candidates.push(
        interpreterCandidate('setting:interpreter', [interp.trim()], true,
          `budgetlens.server.interpreter "${interp.trim()}"`),
      );
      return { candidates, problems };
    }
    problems.push(
      'The setting `budgetlens.server.interpreter` must be the path of a Python interpreter; ' +
        `got ${JSON.stringify(interp)}. It is ignored.`,
    );
  }

  const py = pythonExtensionInterpreter?.filter((part) => part !== '');
  if (py && py.length > 0) {
    candidates.push(
      interpreterCandidate('python-extension', py, false,
        `the Python extension's interpreter "${py.join(' ')}"`),
    );
  }

  const onPath = lookupOnPath('budgetlens');
  if (onPath !== undefined) {
    candidates.push({
      source: 'path',
      run: { command: onPath, args: ['serve'] },
      probe: { command: onPath, args: ['--version'] },
      explicit: false,
      label: `budgetlens on PATH (${onPath})`,
    });
  }
  return { candidates, problems };
}

export interface ProbeResult {
  readonly ok: boolean;
  /** Why not, in a few words (exit status, stderr's last line, spawn error). */
  readonly detail?: string;
}

export interface Attempt {
  readonly candidate: Candidate;
  readonly result: ProbeResult;
}

export type Resolution =
  | { readonly ok: true; readonly candidate: Candidate; readonly attempts: readonly Attempt[] }
  | { readonly ok: false; readonly attempts: readonly Attempt[]; readonly message: string };

/** Probes the candidates in order and picks the first that works (see the module doc). */
export async function resolveServer(
  list: CandidateList,
  probe: (spec: ProcessSpec) => Promise<ProbeResult>,
): Promise<Resolution> {
  const attempts: Attempt[] = [];
  for (const candidate of list.candidates) {
    const result = candidate.probe ? await probe(candidate.probe) : { ok: true };
    attempts.push({ candidate, result });
    if (result.ok) {
      return { ok: true, candidate, attempts };
    }
    if (candidate.explicit) {
      break;
    }
  }
  return { ok: false, attempts, message: notFoundMessage(list.problems, attempts) };
}

/** The notification shown when no server could be started: what was tried and how to fix it. */
export function notFoundMessage(problems: readonly string[], attempts: readonly Attempt[]): string {
  const parts: string[] = ['budgetlens: the language server could not be started.'];
  parts.push(...problems);
  const explicit = attempts.find((a) => a.candidate.explicit);
  if (explicit) {
    parts.push(
      `${explicit.candidate.label} does not work` +
        (explicit.result.detail ? ` (${explicit.result.detail})` : '') +
        '. Fix or clear that setting.',
    );
  } else if (attempts.length === 0) {
    parts.push('No Python interpreter with budgetlens and no `budgetlens` on PATH were found.');
  } else {
    parts.push(
      'Tried: ' +
        attempts
          .map((a) => a.candidate.label + (a.result.detail ? ` (${a.result.detail})` : ''))
          .join('; ') +
        '.',
    );
  }
  parts.push(INSTALL_HINT);
  return parts.join(' ');
}

/**
 * Finds `name` on a PATH string the way a shell would (first directory wins).
 * `isExecutableFile` is the only effect; on Windows, PATHEXT suffixes are tried.
 */
export function findOnPath(
  name: string,
  pathEnv: string | undefined,
  isExecutableFile: (candidatePath: string) => boolean,
  platform: string = 'linux',
  pathExt: string | undefined = undefined,
): string | undefined {
  if (!pathEnv) {
    return undefined;
  }
  const windows = platform === 'win32';
  const sep = windows ? ';' : ':';
  const slash = windows ? '\\' : '/';
  const suffixes = windows ? ['', ...(pathExt ?? '.COM;.EXE;.BAT;.CMD').split(';')] : [''];
  for (const dir of pathEnv.split(sep)) {
    if (dir === '') {
      continue;
    }
    const base = dir.endsWith(slash) || dir.endsWith('/') ? dir : dir + slash;
    for (const suffix of suffixes) {
      const full = base + name + suffix.toLowerCase();
      if (isExecutableFile(full)) {
        return full;
      }
    }
  }
  return undefined;
}
