// metron-fig5d against a server fluidcap neither wrote nor started: llama-server (CPU, tiny model)
// launched natively by the test, beside the simulated engine over HTTP, as the two endpoints of an
// endpoints file. Both are measured and read at a 10% miss rate; llama.cpp does not stamp its
// chunks with their emit time, so its client error is the client's own measure, and says so.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './e2eEnv.ts';
import { fluidcap, llamaEnv, startLlamaServer } from './llamacppSupport.ts';
import { startSimServer, type SimServerHandle } from '../../harness/sim/server.ts';
import { shown } from '../support/hooks.ts';

const llama = llamaEnv('metron-fig5d on llama.cpp as an endpoint');

if (llama) {
  const work = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-fig5d-'));
  const serverLog: string[] = [];
  let server: ChildProcess | null = null;
  let sim: SimServerHandle | null = null;
  const endpoints = join(work, 'endpoints.yaml');

  test.before(shown(async () => {
    const port = await freePort();
    server = await startLlamaServer(llama, port, serverLog);
    sim = await startSimServer({ model: 'llama-3-8b', scheduler: 'sarathi', timeScale: 0.5, port: 0 });
    await sim.ready;
    // Text prompts in this model's small vocabulary, completions (the tiny model has no chat template).
    writeFileSync(
      endpoints,
      [
        'endpoints:',
        `  - { name: llamacpp, label: llama.cpp, url: "http://127.0.0.1:${port}" }`,
        `  - { name: sim, label: "sim (Sarathi scheduler)", url: "${sim.url}", model: llama-3-8b }`,
        'workload:',
        '  api: completions',
        '  prompts: { format: text }',
        '  lengths: { prompt: { dist: uniform, min: 32, max: 192 }, output: { dist: uniform, min: 192, max: 256 } }',
        '  arrivals: { process: poisson }',
        '  seed: 3',
        'profile: { promptLengths: [32, 96, 192, 384], repeats: 2, minR2: 0, maxRepeatCv: 100 }',
        '',
      ].join('\n'),
    );
  }));

  test('both endpoints measured and read at 10%; the README says which client error each has', async () => {
    const t0 = performance.now();
    const r = await fluidcap(['figure', 'metron-fig5d', '--endpoints', endpoints, '--out', join(work, 'results'), '--qps', '4', '--requests', '16'], { timeoutMs: 300_000 });
    console.log(`  metron-fig5d on llama.cpp and the sim: ${((performance.now() - t0) / 1000).toFixed(0)} s`);
    assert.is(r.code, 0, r.stderr.slice(-4000));
    assert.is(server!.exitCode, null, `llama-server died:\n${serverLog.slice(-20).join('\n')}`);
    const dir = /metron-fig5d → (\S+)/.exec(r.stdout)![1];
    const read = readFileSync(join(dir, 'read-at-10pct.csv'), 'utf8').trimEnd().split('\n').slice(1).map((l) => l.split(','));
    assert.equal(read.map((x) => x[0]), ['llamacpp', 'sim']);
    for (const x of read) {
      // A reading inside the grid, or at its smallest deadline for a server faster than 1 ms per token.
      assert.ok(['within', 'below-grid'].includes(x[5]) && Number(x[4]) > 0, x.join(','));
      console.log(`  ${x[0]}: misses 10% at a target TBT of ${(Number(x[4]) * 1000).toPrecision(3)} ms (${x[5]})`);
    }
    const readme = readFileSync(join(dir, 'README.md'), 'utf8');
    assert.match(readme, /llama\.cpp \(http:\/\/127\.0\.0\.1:\d+\): \d+ requests judged .* client timing error ([\d.]+ ms \(the client\u2019s own: the endpoint does not stamp its chunks with their emit time\)|not measured)\./);
    assert.match(readme, /sim \(Sarathi scheduler\) \(http:\/\/127\.0\.0\.1:\d+, model llama-3-8b\): .* client timing error [\d.]+ ms \(p99 of receive \u2212 emit of its chunks\)\./);
  });

  test.after(async () => {
    if (server && server.exitCode === null) server.kill('SIGTERM');
    await sim?.close();
    rmSync(work, { recursive: true, force: true });
  });
}

test.run();
