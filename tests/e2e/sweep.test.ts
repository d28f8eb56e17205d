// `fluidcap sweep` end to end: two inventory hosts (the e2e sshd and a second sshd this test starts
// on another loopback port, both in front of the same Docker engine) and a 2 × 2 matrix of
// simulated-engine settings (max sequences × time scale) in containers. Ctrl-C while the first two
// runs probe leaves no labelled container and exits 130; `--resume` finishes the four capacity
// searches two at a time and writes the per-configuration table. About 1.5 minutes on a loaded
// 2-core machine (82 s measured with a load average near 12).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { e2eEnv, freePort, secondSshd } from './e2eEnv.ts';
import { pinHostKey, simSweepRecipe } from './sweepSupport.ts';
import { BIN, ROOT, childEnv, fluidcap, readJsonl, runDirsIn } from '../pipeline/support.ts';
import { localDocker } from '../../harness/provision/dockerAgent.ts';
import { listRunContainers } from '../../harness/provision/teardown.ts';
import { RUN_LABEL } from '../../harness/provision/containerSpec.ts';

const env = e2eEnv('sweep');

/** Labelled containers of this sweep still on the Docker engine. */
async function sweepContainers(prefix: string): Promise<string[]> {
  const all = await listRunContainers(localDocker());
  return all.map((c) => c.Labels?.[RUN_LABEL] ?? '').filter((run) => run.startsWith(prefix));
}

/** The most runs in progress at once according to the journal's start and end lines, from line `from` on. */
function maxInFlight(lines: Record<string, unknown>[], from = 0): number {
  let now = 0;
  let max = 0;
  for (const l of lines.slice(from)) {
    if (l.type === 'run-started') now += 1;
    if (l.type === 'run-finished') now -= 1;
    max = Math.max(max, now);
  }
  return max;
}

if (env) {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-sweep-'));
  const base = `sweep${process.pid}`;

  test('sweep over two hosts: Ctrl-C leaves no container, --resume runs the four searches two at a time', async () => {
    const t0 = performance.now();
    const sshd2 = await secondSshd(dir, env.sshdConfig);
    try {
      const knownHosts = pinHostKey(env, dir, [{ address: '127.0.0.1', port: env.sshPort }, { address: '127.0.0.1', port: sshd2.port }]);
      const host = (name: string, port: number) => `  - { name: ${name}, address: ${env.sshHost}, port: ${port}, user: ${env.user}, key: ${env.key}, knownHosts: ${knownHosts} }\n`;
      writeFileSync(join(dir, 'inventory.yaml'), `hosts:\n${host('hostA', env.sshPort)}${host('hostB', sshd2.port)}groups:\n  pair: [hostA, hostB]\n`);
      writeFileSync(join(dir, 'base.yaml'), simSweepRecipe(base, { image: env.image, host: 'pair' }, { maxQps: 64, tolerance: 0.3, maxProbes: 4, requests: 24, duration: '15s' }));
      // Two consecutive free ports: both "hosts" share this machine's network.
      const portBase = await freePort(2);
      writeFileSync(join(dir, 'sweep.yaml'), `recipe: base.yaml\nmatrix:\n  maxNumSeqs: [2, 16]\n  timeScale: [1, 3]\nports: { base: ${portBase} }\n`);
      const inv = join(dir, 'inventory.yaml');
      const out = join(dir, 'results');

      const dry = await fluidcap(['sweep', join(dir, 'sweep.yaml'), '--hosts', inv, '--dry-run', '--json'], { timeoutMs: 60_000 });
      assert.is(dry.code, 0, dry.stderr);
      const plan = JSON.parse(dry.stdout) as { parallel: number; runs: { id: string; host: string; port: number }[] };
      assert.is(plan.parallel, 2);
      assert.equal(plan.runs.map((r) => r.host), ['hostA', 'hostB', 'hostA', 'hostB']);
      assert.equal(plan.runs.map((r) => r.port), [portBase, portBase + 1, portBase, portBase + 1]);

      // First pass: Ctrl-C (SIGINT to the process group, as a terminal sends it) once both first runs probe.
      const child = spawn(process.execPath, [BIN, 'sweep', join(dir, 'sweep.yaml'), '--hosts', inv, '--out', out], { cwd: ROOT, env: childEnv(), stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      let stderr = '';
      child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
      child.stdout!.resume();
      const exited = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
      let sweepDir = '';
      const probing = () => {
        // Beside the sweep's directory the results folder holds index.jsonl, once a run has finished.
        const dirs = existsSync(out) ? readdirSync(out, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name) : [];
        if (dirs.length !== 1) return 0;
        sweepDir = join(out, dirs[0]);
        const runs = existsSync(join(sweepDir, 'runs')) ? runDirsIn(join(sweepDir, 'runs')) : [];
        return runs.filter((r) => {
          const events = join(sweepDir, 'runs', r, 'events.jsonl');
          return existsSync(events) && readFileSync(events, 'utf8').includes('"probe-started"');
        }).length;
      };
      const deadline = performance.now() + 240_000;
      while (probing() < 2 && child.exitCode === null && performance.now() < deadline) await new Promise((r) => setTimeout(r, 200));
      assert.is(probing(), 2, `both first runs should be probing: ${stderr.slice(-2000)}`);
      process.kill(-child.pid!, 'SIGINT');
      const code = await exited;
      assert.is(code, 130, stderr.slice(-2000));
      assert.match(stderr, /resume with: fluidcap sweep --resume \S+ --hosts /);
      assert.equal(await sweepContainers(base), [], 'no labelled container left after Ctrl-C');
      const first = readJsonl(join(sweepDir, 'sweep.jsonl'));
      const startedFirst = first.filter((l) => l.type === 'run-started');
      const completedFirst = first.filter((l) => l.type === 'run-finished' && l.status === 'completed').map((l) => l.id);
      const interrupted = first.filter((l) => l.type === 'run-finished' && l.status === 'interrupted').map((l) => l.id);
      assert.ok(interrupted.length >= 1, JSON.stringify(first));
      assert.is(startedFirst.length, completedFirst.length + interrupted.length, `every started run ended, as completed or interrupted: ${JSON.stringify(first.filter((l) => l.type === 'run-finished'))}`);
      assert.is(first.at(-1)!.type, 'sweep-finished');

      // Second pass: --resume resumes the interrupted runs in their own directories and runs the others.
      const resumedFrom = first.length;
      const r = await fluidcap(['sweep', '--resume', sweepDir, '--hosts', inv], { timeoutMs: 600_000 });
      assert.is(r.code, 0, r.stderr.slice(-3000));
      const lines = readJsonl(join(sweepDir, 'sweep.jsonl'));
      const after = lines.slice(resumedFrom);
      const restarted = after.filter((l) => l.type === 'run-started');
      assert.is(restarted.length, 4 - completedFirst.length, 'finished runs are skipped');
      for (const id of interrupted) {
        const again = restarted.find((l) => l.id === id)!;
        assert.ok(typeof again.resumeDir === 'string' && (again.resumeDir as string).includes(`${base}-${id}`), `${id} resumed in its run directory`);
      }
      assert.is(maxInFlight(lines), 2, 'two at a time, never more');
      assert.equal(new Set(lines.filter((l) => l.type === 'run-started').map((l) => l.host)), new Set(['hostA', 'hostB']), 'both hosts used');
      const finished = after.filter((l) => l.type === 'run-finished');
      assert.ok(finished.every((l) => l.status === 'completed'), JSON.stringify(finished));
      assert.equal(await sweepContainers(base), [], 'no labelled container left after the sweep');
      assert.is(runDirsIn(join(sweepDir, 'runs')).length, 4, 'one run directory per configuration');

      // The per-configuration table: four rows with a capacity and a bracket, and the best under each SLO.
      const csv = readFileSync(join(sweepDir, 'report.csv'), 'utf8').trim().split('\n');
      assert.is(csv.length, 5);
      const head = csv[0].split(',');
      const rows = csv.slice(1).map((l) => Object.fromEntries(l.split(',').map((v, i) => [head[i], v])));
      for (const row of rows) {
        assert.is(row.status, 'completed');
        assert.ok(Number(row.capacity_qps) >= 1, `${row.config} capacity ${row.capacity_qps}`);
        assert.ok(Number(row.gpu_seconds) > 0);
        assert.ok(Number(row.qps_per_usd_per_hour) > 0);
      }
      // Each capacity is its bracket's passing rate, with a failing rate above it (or none at the maximum).
      for (const row of rows) {
        assert.is(row.pass_qps, row.capacity_qps, row.config);
        assert.ok(row.fail_qps === '' || Number(row.fail_qps) > Number(row.pass_qps), `${row.config} bracket ${row.pass_qps}/${row.fail_qps}`);
      }
      const md = readFileSync(join(sweepDir, 'report.md'), 'utf8');
      assert.match(md, /\| c01 \| maxNumSeqs=2 timeScale=1 \| [\d.]+ \| [^|]+ \| [\d.]+ \| [\d.]+ \| \[report\]\(<runs\/[^>]+\/report\.html>\) \|/);
      assert.match(md, /\| c01 \| hostA \| 0 \| completed \| [\d.]+ \/ [\d.—]+ \|/);
      assert.match(md, /## Best configuration under each SLO definition[\s\S]*\| recipe SLO \| `fluidity: .*` \| c\d\d seqs\d+ timeScale\d \([\d.]+ QPS\) \|/);
      // The page links each run's own report, relative to the sweep directory.
      const html = readFileSync(join(sweepDir, 'report.html'), 'utf8');
      const links = [...html.matchAll(/<a href="(runs\/[^"]+\/report\.html)"/g)].map((m) => m[1]);
      assert.is(links.length, 4);
      for (const l of links) assert.ok(existsSync(join(sweepDir, decodeURIComponent(l))), l);
      console.log(`sweep e2e: ${((performance.now() - t0) / 1000).toFixed(0)} s; capacities ${rows.map((x) => `${x.config}=${x.capacity_qps}`).join(' ')}`);
    } finally {
      sshd2.stop();
    }
  });
}

test.run();
