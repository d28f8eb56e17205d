// The tie rule from the recipe to the answer: `slo.fluidity.tieRule: missed` reaches the run's plan
// (and so capacity.json's slo), and `fluidcap analyze` judges a run by the rule the run recorded,
// or by --tie-rule. The fixture's tokens land exactly on their deadlines (times in eighths of a
// second, exact in binary): with ties met every deadline is met, with ties missed every one is
// missed, as in the paper's §4 example (M-S10) where Algorithm 1 and Metron's code disagree.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..', '..');
const EXAMPLE = join(ROOT, 'results', 'examples', 'sim-quickstart');
const FAST = join(ROOT, 'tests', 'fixtures', 'recipes', 'fast.yaml');
const dir = mkdtempSync(join(tmpdir(), 'fluidcap-tie-rule-'));
const childEnv = { ...process.env };
delete childEnv.FORCE_COLOR;
delete childEnv.NO_COLOR;

function fluidcap(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [join(ROOT, 'bin', 'fluidcap.js'), ...args], { cwd: dir, maxBuffer: 64 << 20, env: childEnv }, (err, stdout, stderr) =>
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

// Three requests: the first token exactly 0.5 s after arrival, then eight more exactly 125 ms apart.
const TIES = Array.from({ length: 3 }, (_, i) =>
  JSON.stringify({
    id: `tie-${i}`, scheduledS: 10 * i, sentS: 10 * i, promptTokens: 100, maxTokens: 9, outputTokens: 9,
    chunks: Array.from({ length: 9 }, (_, k) => [10 * i + 0.5 + 0.125 * k, 1]), status: 'ok', httpStatus: 200, error: null,
  }),
).join('\n') + '\n';
const DEADLINES = ['--ttft-deadline', '0.5s', '--tbt-deadline', '125ms'];

interface Analysis {
  summary: { slo: { fluidity: { source: string; tieRule?: string } }; fluidityDeadlines: { tieRule: string } };
  requests: { id: string; fluidity: number; deadlinesMissed: number; deadlinesTotal: number }[];
}
const ties = (a: Analysis) => a.requests.filter((r) => r.id.startsWith('tie-')).map((r) => [r.fluidity, r.deadlinesMissed, r.deadlinesTotal]);

test('a recipe\u2019s slo.fluidity.tieRule reaches the run\u2019s plan (what capacity.json records)', async () => {
  const recipe = join(dir, 'fast-missed.yaml');
  writeFileSync(recipe, readFileSync(FAST, 'utf8').replace('minFluidity: 0.9, percentile: 99 }', 'minFluidity: 0.9, percentile: 99, tieRule: missed }'));
  const r = await fluidcap(['run', recipe, '--dry-run']);
  assert.is(r.code, 0, r.stderr);
  assert.match(r.stdout, /slo:\n  fluidity:\n(    .*\n)*    tieRule: missed\n/);
  const bad = join(dir, 'fast-bad.yaml');
  writeFileSync(bad, readFileSync(recipe, 'utf8').replace('tieRule: missed', 'tieRule: strict'));
  const refused = await fluidcap(['run', bad, '--dry-run']);
  assert.is(refused.code, 2);
  assert.match(refused.stderr, /fast-bad\.yaml: slo\.fluidity\.tieRule must be one of "met", "missed", got "strict"/);
});

test('analyze of a file: ties met by default, all missed with --tie-rule missed, which the SLO text and the JSON state', async () => {
  const file = join(dir, 'ties.jsonl');
  writeFileSync(file, TIES);
  const met = await fluidcap(['analyze', file, ...DEADLINES, '--json']);
  const missed = await fluidcap(['analyze', file, ...DEADLINES, '--tie-rule', 'missed', '--json']);
  assert.is(met.code, 0, met.stderr);
  assert.is(missed.code, 0, missed.stderr);
  const a = JSON.parse(met.stdout) as Analysis;
  const b = JSON.parse(missed.stdout) as Analysis;
  assert.equal(ties(a), [[1, 0, 9], [1, 0, 9], [1, 0, 9]]);
  assert.equal(ties(b), [[0, 9, 9], [0, 9, 9], [0, 9, 9]]);
  assert.is(a.summary.fluidityDeadlines.tieRule, 'met');
  assert.is(b.summary.fluidityDeadlines.tieRule, 'missed');
  assert.match(b.summary.slo.fluidity.source, /a token on its deadline missed\) \[--tbt-deadline 125ms --tie-rule missed\]$/);
  const wrong = await fluidcap(['analyze', file, '--tie-rule', 'late']);
  assert.is(wrong.code, 2);
  assert.match(wrong.stderr, /--tie-rule must be met or missed, got "late"/);
});

test('analyze of a run judges by the tie rule its capacity.json recorded; --tie-rule overrides it', async () => {
  // A run directory whose recipe said tieRule: missed, with one probe's timelines made of ties.
  const run = join(dir, 'run');
  cpSync(EXAMPLE, run, { recursive: true });
  const capFile = join(run, 'capacity.json');
  const cap = JSON.parse(readFileSync(capFile, 'utf8'));
  cap.slo.fluidity.tieRule = 'missed';
  writeFileSync(capFile, JSON.stringify(cap));
  const probe = readdirSync(join(run, 'probes')).sort()[0];
  writeFileSync(join(run, 'probes', probe, 'timelines.jsonl'), TIES);
  const recorded = JSON.parse((await fluidcap(['analyze', run, ...DEADLINES, '--json'])).stdout) as Analysis;
  assert.equal(ties(recorded), [[0, 9, 9], [0, 9, 9], [0, 9, 9]]);
  assert.is(recorded.summary.fluidityDeadlines.tieRule, 'missed');
  const overridden = JSON.parse((await fluidcap(['analyze', run, ...DEADLINES, '--tie-rule', 'met', '--json'])).stdout) as Analysis;
  assert.equal(ties(overridden), [[1, 0, 9], [1, 0, 9], [1, 0, 9]]);
  // A run recorded before the rule existed (no tieRule) counted ties met, and is judged so.
  delete cap.slo.fluidity.tieRule;
  writeFileSync(capFile, JSON.stringify(cap));
  const old = JSON.parse((await fluidcap(['analyze', run, ...DEADLINES, '--json'])).stdout) as Analysis;
  assert.equal(ties(old), [[1, 0, 9], [1, 0, 9], [1, 0, 9]]);
});

test.after(() => rmSync(dir, { recursive: true, force: true }));
test.run();
