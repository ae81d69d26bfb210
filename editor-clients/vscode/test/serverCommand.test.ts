import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  type Candidate,
  findOnPath,
  INSTALL_HINT,
  type ProbeResult,
  type ProcessSpec,
  resolveServer,
  serverCandidates,
} from '../src/serverCommand';

const nothingOnPath = (): string | undefined => undefined;
const budgetlensOnPath = (name: string): string | undefined =>
  name === 'budgetlens' ? '/usr/local/bin/budgetlens' : undefined;

function argv(c: Candidate): string[] {
  return [c.run.command, ...c.run.args];
}

/** A probe that answers from a table keyed by the joined argv, recording what it was asked. */
function fakeProbe(table: Record<string, ProbeResult>): {
  probe: (spec: ProcessSpec) => Promise<ProbeResult>;
  asked: string[];
} {
  const asked: string[] = [];
  return {
    asked,
    probe: (spec) => {
      const key = [spec.command, ...spec.args].join(' ');
      asked.push(key);
      return Promise.resolve(table[key] ?? { ok: false, detail: 'not found' });
    },
  };
}

describe('serverCandidates', () => {
  it('uses budgetlens.server.command as given and nothing else', () => {
    const list = serverCandidates(
      { command: ['/venv/bin/budgetlens', 'serve', '--log-level', 'debug'], interpreter: '/usr/bin/python3' },
      ['/py/bin/python'],
      budgetlensOnPath,
    );
    assert.equal(list.candidates.length, 1);
    assert.deepEqual(argv(list.candidates[0]), ['/venv/bin/budgetlens', 'serve', '--log-level', 'debug']);
    assert.equal(list.candidates[0].explicit, true);
    assert.equal(list.candidates[0].probe, null);
    assert.deepEqual(list.problems, []);
  });

  it('runs the interpreter setting as python -m budgetlens_lsp serve and probes the import', () => {
    const list = serverCandidates({ interpreter: ' /opt/py/bin/python3 ' }, ['/other/python'], budgetlensOnPath);
    assert.equal(list.candidates.length, 1);
    const [c] = list.candidates;
    assert.equal(c.source, 'setting:interpreter');
    assert.deepEqual(argv(c), ['/opt/py/bin/python3', '-m', 'budgetlens_lsp', 'serve']);
    assert.deepEqual(c.probe, { command: '/opt/py/bin/python3', args: ['-c', 'import budgetlens_lsp'] });
  });

  it('falls back from the Python extension interpreter to PATH, keeping an argv prefix', () => {
    const list = serverCandidates({}, ['conda', 'run', '-n', 'tools', 'python'], budgetlensOnPath);
    assert.deepEqual(
      list.candidates.map((c) => c.source),
      ['python-extension', 'path'],
    );
    assert.deepEqual(argv(list.candidates[0]), ['conda', 'run', '-n', 'tools', 'python', '-m', 'budgetlens_lsp', 'serve']);
    assert.deepEqual(list.candidates[0].probe, {
      command: 'conda',
      args: ['run', '-n', 'tools', 'python', '-c', 'import budgetlens_lsp'],
    });
    assert.deepEqual(argv(list.candidates[1]), ['/usr/local/bin/budgetlens', 'serve']);
    assert.deepEqual(list.candidates[1].probe, { command: '/usr/local/bin/budgetlens', args: ['--version'] });
    assert.ok(list.candidates.every((c) => !c.explicit));
  });

  it('treats an empty command array, null and empty strings as unset', () => {
    const list = serverCandidates({ command: [], interpreter: '' }, undefined, budgetlensOnPath);
    assert.deepEqual(list.candidates.map((c) => c.source), ['path']);
    assert.deepEqual(list.problems, []);
    const list2 = serverCandidates({ command: null, interpreter: null }, [], nothingOnPath);
    assert.deepEqual(list2.candidates, []);
  });

  it('reports a malformed command setting and goes on with the next source', () => {
    const list = serverCandidates({ command: 'budgetlens serve' }, undefined, budgetlensOnPath);
    assert.equal(list.problems.length, 1);
    assert.match(list.problems[0], /`budgetlens\.server\.command` must be an array of non-empty strings/);
    assert.match(list.problems[0], /"budgetlens serve"/);
    assert.deepEqual(list.candidates.map((c) => c.source), ['path']);

    const blanks = serverCandidates({ command: ['budgetlens', ''] }, undefined, nothingOnPath);
    assert.equal(blanks.problems.length, 1);
    assert.deepEqual(blanks.candidates, []);
  });

  it('reports a non-string interpreter setting', () => {
    const list = serverCandidates({ interpreter: 42 }, undefined, nothingOnPath);
    assert.match(list.problems[0], /`budgetlens\.server\.interpreter` must be the path of a Python interpreter; got 42/);
    assert.deepEqual(list.candidates, []);
  });
});

describe('resolveServer', () => {
  it('trusts the command setting without probing it', async () => {
    const { probe, asked } = fakeProbe({});
    const res = await resolveServer(serverCandidates({ command: ['bl', 'serve'] }, undefined, nothingOnPath), probe);
    assert.equal(res.ok, true);
    assert.deepEqual(asked, []);
    assert.ok(res.ok && res.candidate.source === 'setting:command');
  });

  it('skips a Python interpreter without budgetlens and uses budgetlens on PATH', async () => {
    const { probe, asked } = fakeProbe({
      '/py/bin/python -c import budgetlens_lsp': { ok: false, detail: "ModuleNotFoundError: No module named 'budgetlens_lsp'" },
      '/usr/local/bin/budgetlens --version': { ok: true },
    });
    const res = await resolveServer(serverCandidates({}, ['/py/bin/python'], budgetlensOnPath), probe);
    assert.deepEqual(asked, ['/py/bin/python -c import budgetlens_lsp', '/usr/local/bin/budgetlens --version']);
    assert.ok(res.ok);
    assert.deepEqual(argv(res.candidate), ['/usr/local/bin/budgetlens', 'serve']);
  });

  it('prefers the Python extension interpreter when budgetlens imports there', async () => {
    const { probe, asked } = fakeProbe({ '/py/bin/python -c import budgetlens_lsp': { ok: true } });
    const res = await resolveServer(serverCandidates({}, ['/py/bin/python'], budgetlensOnPath), probe);
    assert.deepEqual(asked, ['/py/bin/python -c import budgetlens_lsp']);
    assert.ok(res.ok);
    assert.equal(res.candidate.source, 'python-extension');
  });

  it('does not fall through past a broken interpreter setting, and says which setting', async () => {
    const { probe, asked } = fakeProbe({ '/usr/local/bin/budgetlens --version': { ok: true } });
    const res = await resolveServer(serverCandidates({ interpreter: '/nope/python' }, undefined, budgetlensOnPath), probe);
    assert.deepEqual(asked, ['/nope/python -c import budgetlens_lsp']);
    assert.equal(res.ok, false);
    assert.ok(!res.ok);
    assert.match(res.message, /budgetlens\.server\.interpreter "\/nope\/python" does not work \(not found\)\. Fix or clear that setting\./);
    assert.ok(res.message.includes('pip install /path/to/budgetlens'));
  });

  it('explains how to install when nothing was found at all', async () => {
    const { probe } = fakeProbe({});
    const res = await resolveServer(serverCandidates({}, undefined, nothingOnPath), probe);
    assert.ok(!res.ok);
    assert.equal(
      res.message,
      'budgetlens: the language server could not be started. No Python interpreter with budgetlens and no ' +
        '`budgetlens` on PATH were found. ' + INSTALL_HINT,
    );
    assert.match(res.message, /pip install \/path\/to\/budgetlens/);
  });

  it('lists every failed attempt with its reason', async () => {
    const { probe } = fakeProbe({
      '/usr/local/bin/budgetlens --version': { ok: false, detail: 'exit status 1' },
    });
    const res = await resolveServer(serverCandidates({}, ['/py/python'], budgetlensOnPath), probe);
    assert.ok(!res.ok);
    assert.match(
      res.message,
      /Tried: the Python extension's interpreter "\/py\/python" \(not found\); budgetlens on PATH \(\/usr\/local\/bin\/budgetlens\) \(exit status 1\)\./,
    );
  });
});

describe('findOnPath', () => {
  it('returns the first executable match in PATH order', () => {
    const exists = new Set(['/b/budgetlens', '/c/budgetlens']);
    assert.equal(findOnPath('budgetlens', '/a::/b:/c', (p) => exists.has(p)), '/b/budgetlens');
  });

  it('returns undefined for an empty or missing PATH', () => {
    assert.equal(findOnPath('budgetlens', '', () => true), undefined);
    assert.equal(findOnPath('budgetlens', undefined, () => true), undefined);
  });

  it('tries PATHEXT suffixes on Windows', () => {
    const seen: string[] = [];
    const found = findOnPath('budgetlens', 'C:\\py\\Scripts;D:\\x', (p) => {
      seen.push(p);
      return p === 'D:\\x\\budgetlens.exe';
    }, 'win32', '.EXE;.CMD');
    assert.equal(found, 'D:\\x\\budgetlens.exe');
    assert.deepEqual(seen, [
      'C:\\py\\Scripts\\budgetlens',
      'C:\\py\\Scripts\\budgetlens.exe',
      'C:\\py\\Scripts\\budgetlens.cmd',
      'D:\\x\\budgetlens',
      'D:\\x\\budgetlens.exe',
    ]);
  });
});
