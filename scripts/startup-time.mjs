#!/usr/bin/env node
// Prints the median wall time of `fluidcap --help` over 20 starts (a fresh node process each),
// the CLI's start-up cost that every verb pays. Usage: node scripts/startup-time.mjs [--runs N]
// [--from-source | --compare]. --from-source times the TypeScript sources through tsx (as without a
// current dist/); --compare alternates both, start by start, so both see the same machine load.
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../bin/fluidcap.js', import.meta.url));
const args = process.argv.slice(2);
const runsAt = args.indexOf('--runs');
const runs = runsAt >= 0 ? Number(args[runsAt + 1]) : 20;
if (!Number.isInteger(runs) || runs < 1) {
  console.error(`startup-time: --runs must be a positive integer, got ${JSON.stringify(args[runsAt + 1])}`);
  process.exit(2);
}
const modes = args.includes('--compare')
  ? [{ label: 'bin/fluidcap.js as installed', fromSource: false }, { label: 'TypeScript sources through tsx', fromSource: true }]
  : [{ label: args.includes('--from-source') ? 'TypeScript sources through tsx' : 'bin/fluidcap.js as installed', fromSource: args.includes('--from-source') }];

/** Seconds from spawn to exit of one `fluidcap --help`. */
function startS(fromSource) {
  const env = { ...process.env, FLUIDCAP_FROM_SOURCE: fromSource ? '1' : '' };
  const t0 = performance.now();
  const r = spawnSync(process.execPath, [bin, '--help'], { env, encoding: 'utf8' });
  const s = (performance.now() - t0) / 1000;
  if (r.status !== 0) {
    console.error(`startup-time: fluidcap --help exited with ${r.status}: ${r.stderr}`);
    process.exit(1);
  }
  return s;
}

const timesS = modes.map(() => []);
for (let i = 0; i < runs; i++) modes.forEach((m, j) => timesS[j].push(startS(m.fromSource)));
modes.forEach((m, j) => {
  const t = timesS[j].sort((a, b) => a - b);
  const mid = Math.floor(runs / 2);
  const medianS = runs % 2 === 1 ? t[mid] : (t[mid - 1] + t[mid]) / 2;
  console.log(`fluidcap --help (${m.label}): median ${medianS.toFixed(3)} s over ${runs} starts (min ${t[0].toFixed(3)}, max ${t.at(-1).toFixed(3)})`);
});
