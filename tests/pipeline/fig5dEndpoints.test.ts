// `fluidcap figure metron-fig5d --endpoints <file>` against two real local endpoints: the simulated
// engine served over HTTP twice, once with vLLM's scheduler and once with Sarathi-Serve's, the
// second behind a proxy that answers 401 unless the request carries the API key the endpoints file
// names by variable. Each endpoint gets its own run; the figure reads both at a 10% miss rate, its
// reading agrees with the by-deadline table, the paper's public-endpoint claims are "not comparable
// here (public endpoint)", the key appears in no file and no output, --resume reuses both runs, and
// a key variable that is not set exits 2 before anything runs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startSimServer, type SimServerHandle } from '../../harness/sim/server.ts';
import { fluidcap, readJson } from './support.ts';
import { shown } from '../support/hooks.ts';

const work = mkdtempSync(join(tmpdir(), 'fluidcap-fig5d-endpoints-'));
const outDir = join(work, 'results');
const KEY = `sk-canary-${randomBytes(10).toString('hex')}`;
const KEY_VAR = 'FLUIDCAP_FIG5D_TEST_KEY';
let vllm: SimServerHandle;
let sarathi: SimServerHandle;
let proxy: Server;
let unauthorized = 0;
// Requests that reached the proxy outside the path its API lives under (/openai/v1, as a hosted API's).
const outsidePrefix: string[] = [];
const PREFIX = '/openai';
let figDir = '';

// Forwards every request under PREFIX to `target`, without the prefix, if it carries the key; 401
// without the key and 404 outside the prefix (as a hosted API behind a gateway does).
function authProxy(target: string): Promise<{ server: Server; url: string }> {
  const t = new URL(target);
  const server = createServer((req, res) => {
    if (req.headers.authorization !== `Bearer ${KEY}`) {
      unauthorized += 1;
      res.writeHead(401, { 'content-type': 'application/json' }).end('{"error":{"message":"invalid api key"}}');
      return;
    }
    if (!req.url?.startsWith(`${PREFIX}/`)) {
      outsidePrefix.push(`${req.method} ${req.url}`);
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"no such route"}}');
      return;
    }
    const up = request({ host: t.hostname, port: t.port, path: req.url.slice(PREFIX.length), method: req.method, headers: req.headers }, (r) => {
      res.writeHead(r.statusCode ?? 502, r.headers);
      r.pipe(res);
    });
    up.on('error', () => res.destroy());
    req.pipe(up);
  });
  return new Promise((done) => server.listen(0, '127.0.0.1', () => done({ server, url: `http://127.0.0.1:${(server.address() as { port: number }).port}` })));
}

const endpointsFile = join(work, 'endpoints.yaml');
const writeEndpoints = (keyVar: string, sarathiUrl: string) =>
  writeFileSync(
    endpointsFile,
    [
      'endpoints:',
      `  - { name: sim-vllm, label: "sim (vLLM scheduler)", url: "${vllm.url}", model: llama-3-8b }`,
      `  - { name: sim-sarathi, label: "sim (Sarathi scheduler)", url: "${sarathiUrl}", model: llama-3-8b, apiKeyEnv: ${keyVar} }`,
      'workload:',
      '  api: chat',
      '  prompts: { format: text }',
      '  lengths: { prompt: { dist: uniform, min: 512, max: 3072 }, output: { dist: uniform, min: 128, max: 256 } }',
      '  arrivals: { process: poisson }',
      '  seed: 7',
      'profile: { promptLengths: [512, 1536, 3072], repeats: 2, minR2: 0, maxRepeatCv: 100 }',
      '',
    ].join('\n'),
  );

test.before(shown(async () => {
  // Time-scaled so a probe of long prompts is short here; both share the model and the GPU.
  vllm = await startSimServer({ model: 'llama-3-8b', scheduler: 'vllm', timeScale: 0.5, port: 0 });
  sarathi = await startSimServer({ model: 'llama-3-8b', scheduler: 'sarathi', timeScale: 0.5, port: 0 });
  await Promise.all([vllm.ready, sarathi.ready]);
  const p = await authProxy(sarathi.url);
  proxy = p.server;
  // Named as a hosted API is (its OpenAI base URL): every route fluidcap asks for must stay under the path.
  writeEndpoints(KEY_VAR, `${p.url}${PREFIX}/v1`);
}));

test.after(async () => {
  await Promise.all([vllm?.close(), sarathi?.close(), new Promise((r) => (proxy ? proxy.close(r) : r(null)))]);
  rmSync(work, { recursive: true, force: true });
});

const csv = (file: string) => readFileSync(file, 'utf8').trimEnd().split('\n').map((l) => [...l.matchAll(/(?:^|,)("(?:[^"]|"")*"|[^,]*)/g)].map((m) => (m[1].startsWith('"') ? m[1].slice(1, -1).replace(/""/g, '"') : m[1])));
function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => (statSync(join(dir, name)).isDirectory() ? filesUnder(join(dir, name)) : [join(dir, name)]));
}

test('a key variable that is not set exits 2 naming it, before any run', async () => {
  const r = await fluidcap(['figure', 'metron-fig5d', '--endpoints', endpointsFile, '--out', outDir, '--qps', '4', '--requests', '20'], { timeoutMs: 60_000 });
  assert.is(r.code, 2, r.stderr.slice(-2000));
  assert.match(r.stderr, /endpoints\.yaml: an endpoint's recipe cannot run:\nendpoints\[1\]\.apiKeyEnv names FLUIDCAP_FIG5D_TEST_KEY, which is not set in the environment/);
  assert.is(readdirSync(outDir).flatMap((d) => readdirSync(join(outDir, d, 'runs'))).length, 0, 'a run started');
});

test('both endpoints measured, each read at 10%; the reading agrees with the table; the paper\u2019s endpoints not comparable here; the key nowhere', async () => {
  const t0 = performance.now();
  const r = await fluidcap(['figure', 'metron-fig5d', '--endpoints', endpointsFile, '--out', outDir, '--qps', '4', '--requests', '20'], { timeoutMs: 300_000, env: { [KEY_VAR]: KEY } });
  console.log(`  metron-fig5d on two sim endpoints: ${((performance.now() - t0) / 1000).toFixed(0)} s`);
  assert.is(r.code, 0, r.stderr.slice(-3000));
  figDir = /metron-fig5d → (\S+)/.exec(r.stdout)![1];
  assert.is(unauthorized, 0, 'a request reached the proxy without the key');
  assert.equal(outsidePrefix, [], 'a request left the endpoint\'s path');
  const by = csv(join(figDir, 'by-deadline.csv'));
  const read = csv(join(figDir, 'read-at-10pct.csv'));
  assert.equal(read.slice(1).map((x) => x[0]), ['sim-vllm', 'sim-sarathi']);
  for (const row of read.slice(1)) {
    const name = row[0];
    assert.is(row[5], 'within', row.join(','));
    const tbt = Number(row[4]);
    // On the grid, the deadlines at or above the reading miss at most 10%, and the one below it more.
    const curve = by.filter((x) => x[0] === name).map((x) => [Number(x[3]), Number(x[4])]);
    const above = curve.filter(([d]) => d >= tbt);
    const below = curve.filter(([d]) => d < tbt).at(-1)!;
    assert.ok(above.length > 0 && above[0][1] <= 0.1, `${name}: ${JSON.stringify(above[0])} at or above ${tbt}`);
    assert.ok(below[1] > 0.1, `${name}: ${JSON.stringify(below)} below ${tbt}`);
  }
  const claims = csv(join(figDir, 'claims.csv'));
  const m23 = claims.find((x) => x[0] === 'M-23' && x[1] === 'ordering')!;
  assert.is(m23[8], 'not comparable here');
  assert.match(m23[9], /^public endpoint: /);
  const readme = readFileSync(join(figDir, 'README.md'), 'utf8');
  assert.match(readme, /Those readings are not comparable here \(public endpoint\)/);
  assert.match(readme, /API keys are read from the environment variables the endpoints file names \(sim-sarathi: FLUIDCAP_FIG5D_TEST_KEY\) and never written/);
  // Each endpoint is an ordinary run of engine endpoint.
  const state = readJson<{ runs: Record<string, string> }>(join(figDir, 'figure.json'));
  assert.equal(Object.keys(state.runs).sort(), ['sim-sarathi', 'sim-vllm']);
  for (const text of [r.stdout, r.stderr, ...filesUnder(figDir).map((f) => readFileSync(f).toString('latin1'))]) assert.not.ok(text.includes(KEY), 'the key was written');
});

test('--resume reuses both runs and redraws the same readings', async () => {
  assert.ok(figDir, 'no figure (the test above failed)');
  const before = readFileSync(join(figDir, 'read-at-10pct.csv'), 'utf8');
  const r = await fluidcap(['figure', '--resume', figDir], { timeoutMs: 120_000, env: { [KEY_VAR]: KEY } });
  assert.is(r.code, 0, r.stderr.slice(-2000));
  assert.is((r.stderr.match(/: reusing /g) ?? []).length, 2, r.stderr);
  assert.is(readFileSync(join(figDir, 'read-at-10pct.csv'), 'utf8'), before);
});

test.run();
