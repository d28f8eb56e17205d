// The recipe's `load` section: where probes are sent from. Bad values name the file, the field and
// the value (exit 2 from the CLI); the default is an agent beside a container on another host and
// this process otherwise, and asking for several agents asks for agents.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseRecipe, type Recipe, type RecipeSource } from '../../harness/recipe/parse.ts';
import { loadPlan, planProblems } from '../../harness/capacity/runPlan.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const source: RecipeSource = { file: 'recipes/x.yaml', dir: '/nowhere', sloText: {} };
const raw = (target: Record<string, unknown>, load?: unknown) => ({
  name: 'unit',
  workload: { lengths: { preset: 'arxiv-4k' } },
  slo: { fluidity: { tbtDeadline: '25ms' } },
  target: { engine: 'sim', model: 'llama-3-8b', gpuProfile: 'h100-sxm-80gb', ...target },
  ...(load === undefined ? {} : { load }),
});
const problems = (r: unknown) => {
  const p = parseRecipe(r, source);
  return p.ok ? [] : p.problems;
};
const parsed = (r: unknown): Recipe => {
  const p = parseRecipe(r, source);
  if (!p.ok) throw new Error(p.problems.join('\n'));
  return p.recipe;
};

test('load.from and load.agents: bad values name the file, the field and the value', () => {
  const [p1] = problems(raw({ image: 'fluidcap/sim:dev', host: 'gpu1' }, { from: 'server' }));
  assert.is(p1, 'recipes/x.yaml: load.from must be one of "agent", "client", got "server" (string)');
  assert.match(problems(raw({ image: 'fluidcap/sim:dev' }, { agents: 0 }))[0], /^recipes\/x\.yaml: load\.agents .*got 0/);
  assert.match(problems(raw({ image: 'fluidcap/sim:dev' }, { agents: 65 }))[0], /load\.agents must be at most 64, got 65/);
  assert.match(problems(raw({ image: 'fluidcap/sim:dev' }, { from: 'agent', extra: 1 }))[0], /load/);
});

test('load.from: agent is refused where there is no container to stand beside', () => {
  assert.match(problems(raw({}, { from: 'agent' }))[0], /^recipes\/x\.yaml: load\.from must be client without target\.image: .*got "agent"/);
  const endpoint = raw({ engine: 'endpoint', endpoint: { url: 'http://127.0.0.1:9/v1' }, gpuProfile: undefined, model: 'm' }, { from: 'agent' });
  assert.ok(problems(endpoint).some((p) => /load\.from must be client for engine endpoint/.test(p)), problems(endpoint).join('\n'));
  assert.match(problems(raw({ image: 'fluidcap/sim:dev' }, { from: 'client', agents: 2 }))[0], /^recipes\/x\.yaml: load\.agents must be 1 with load\.from: client .*got 2/);
});

test('default: an agent beside a container on another host; this process for local, in-process, process and endpoint engines', () => {
  assert.equal(loadPlan(parsed(raw({ image: 'fluidcap/sim:dev', host: 'gpu1' }))), { from: 'agent', chosenBy: 'default', agents: 1, hosts: null });
  assert.equal(loadPlan(parsed(raw({ image: 'fluidcap/sim:dev', host: 'gpu1' }, { from: 'agent' }))), { from: 'agent', chosenBy: 'recipe', agents: 1, hosts: null });
  assert.equal(loadPlan(parsed(raw({ image: 'fluidcap/sim:dev', host: 'gpu1' }, { from: 'client' }))), { from: 'client', chosenBy: 'recipe', agents: 1, hosts: null });
  // On this machine the client is already beside the engine.
  assert.equal(loadPlan(parsed(raw({ image: 'fluidcap/sim:dev' }))), { from: 'client', chosenBy: 'default', agents: 1, hosts: null });
  assert.equal(loadPlan(parsed(raw({ image: 'fluidcap/sim:dev', host: 'local' }))), { from: 'client', chosenBy: 'default', agents: 1, hosts: null });
  assert.equal(loadPlan(parsed(raw({}))), { from: 'client', chosenBy: 'default', agents: 1, hosts: null });
  // An engine run as a process may have no Docker on its host; an endpoint has no container.
  const asProcess = raw({ host: 'gpu1', runtime: 'process', process: { command: ['/opt/fluidcap/bin/fluidcap.js', 'sim', 'serve'] } });
  assert.equal(loadPlan(parsed(asProcess)), { from: 'client', chosenBy: 'default', agents: 1, hosts: null });
  const endpoint = raw({ engine: 'endpoint', endpoint: { url: 'http://10.0.0.5:8000/v1' }, gpuProfile: undefined, model: 'm' });
  assert.equal(loadPlan(parsed(endpoint)), { from: 'client', chosenBy: 'default', agents: 1, hosts: null });
  assert.equal(loadPlan(parsed(raw({ image: 'fluidcap/sim:dev' }, { agents: 3, hosts: ['cpus'] }))), { from: 'agent', chosenBy: 'default', agents: 3, hosts: ['cpus'] });
});

test('several agents where there is no container to stand beside: the plan refuses them, naming why', () => {
  const modelContext = () => 8192;
  const inProcess = parsed(raw({}, { agents: 2 }));
  assert.equal(loadPlan(inProcess).from, 'client');
  assert.ok(planProblems(inProcess, { modelContext }).some((p) => /^recipes\/x\.yaml: load\.agents \(2\): more than 1 needs load agents, and this engine runs inside this process/.test(p)), planProblems(inProcess, { modelContext }).join('\n'));
  const asProcess = parsed(raw({ host: 'gpu1', runtime: 'process', process: { command: ['/opt/fluidcap/bin/fluidcap.js', 'sim', 'serve'] } }, { agents: 2 }));
  assert.ok(planProblems(asProcess, { modelContext }).some((p) => /load\.agents \(2\): .*runs as a process \(target\.runtime: process\)/.test(p)), planProblems(asProcess, { modelContext }).join('\n'));
});

test('the CLI refuses a bad load.from with exit 2 and one line naming file, field and value', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-load-recipe-'));
  const file = join(dir, 'bad.yaml');
  writeFileSync(file, JSON.stringify(raw({ image: 'fluidcap/sim:dev' }, { from: 'elsewhere' })));
  const r = await new Promise<{ code: number; stderr: string }>((done) =>
    execFile(process.execPath, [join(ROOT, 'bin', 'fluidcap.js'), 'run', file, '--dry-run'], { cwd: dir, timeout: 120_000 }, (err, _out, stderr) => done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stderr })),
  );
  assert.is(r.code, 2, r.stderr);
  assert.match(r.stderr, /bad\.yaml: load\.from must be one of "agent", "client", got "elsewhere"/);
});

test.run();
