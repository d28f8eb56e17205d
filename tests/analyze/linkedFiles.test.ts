// `fluidcap analyze <runDir>` on a run directory from someone else: a timelines.jsonl (or a probe
// directory, or the fit) that is a link to a file outside is refused, exit 2, and nothing of the
// linked file reaches stdout or stderr. A real child process on a copy of the committed example run.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..', '..');
const EXAMPLE = join(ROOT, 'results', 'examples', 'sim-quickstart');
const dir = mkdtempSync(join(tmpdir(), 'fluidcap-analyze-links-'));
const childEnv = { ...process.env };
delete childEnv.FORCE_COLOR;
delete childEnv.NO_COLOR;

function analyze(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [join(ROOT, 'bin', 'fluidcap.js'), 'analyze', ...args], { cwd: dir, maxBuffer: 64 << 20, env: childEnv }, (err, stdout, stderr) =>
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

// A file shaped like credentials: each line would be a "bad line" quoted in analyze's problems.
const SECRET = 'aws_secret_access_key = CANARY-wJalrXUtnFEMI-K7MDENG-bPxRfiCY';
const secretFile = join(dir, 'credentials');
writeFileSync(secretFile, `[default]\n${SECRET}\n${SECRET}\n`);

function copyRun(name: string): { runDir: string; probe: string } {
  const runDir = join(dir, name);
  cpSync(EXAMPLE, runDir, { recursive: true });
  const probe = readdirSync(join(runDir, 'probes')).sort()[0];
  return { runDir, probe };
}

const noSecret = (r: { stdout: string; stderr: string }) => {
  assert.not.ok(r.stdout.includes('CANARY') || r.stderr.includes('CANARY'), `the linked file was quoted:\n${r.stderr.slice(0, 2000)}\n${r.stdout.slice(0, 2000)}`);
};

test('a timelines.jsonl linked to a credentials file: refused, exit 2, not quoted (with and without --json)', async () => {
  const { runDir, probe } = copyRun('timelines-link');
  const timelines = join(runDir, 'probes', probe, 'timelines.jsonl');
  rmSync(timelines);
  symlinkSync(secretFile, timelines);
  for (const args of [[runDir], [runDir, '--json']]) {
    const r = await analyze(args);
    assert.is(r.code, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`probes/${probe}/timelines\\.jsonl: is a symbolic link inside`));
    noSecret(r);
  }
});

test('a probe directory linked outside the run: refused, exit 2', async () => {
  const { runDir, probe } = copyRun('probe-link');
  const outside = join(dir, 'outside-probe');
  renameSync(join(runDir, 'probes', probe), outside);
  rmSync(join(outside, 'timelines.jsonl'));
  symlinkSync(secretFile, join(outside, 'timelines.jsonl'));
  symlinkSync(outside, join(runDir, 'probes', probe));
  const r = await analyze([runDir, '--json']);
  assert.is(r.code, 2, r.stderr);
  assert.match(r.stderr, new RegExp(`probes/${probe}: is a symbolic link inside`));
  noSecret(r);
});

test('the unlinked copy still analyses (exit 0)', async () => {
  const { runDir } = copyRun('plain');
  const r = await analyze([runDir, '--json']);
  assert.is(r.code, 0, r.stderr);
  assert.ok(JSON.parse(r.stdout).requests.length > 0);
});

test.run();
