// Engines run as processes, without SSH: the shell quoting every command line rests on (fuzzed
// through real shells), the start script's argv and environment reaching the engine exactly, the
// state directory's formats, the stop script against real process groups (TERM, KILL after the
// grace, a reused group id left alone), the recipe rules, and the argv shared with containers.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRng } from '../../harness/util/rng.ts';
import { shellJoin, shellQuote } from '../../harness/util/shellQuote.ts';
import { startScript, stopScript, checkScript, listScript, exitCodeScript } from '../../harness/provision/processScripts.ts';
import { envLines, formatLabels, parseLabels, parsePid, parseStopOutcome, stateDirOf, stateEntries } from '../../harness/provision/processState.ts';
import { targetSchema } from '../../harness/provision/targetSpec.ts';
import { renderContainerSpec } from '../../harness/provision/containerSpec.ts';
import { formatProcessCommand, renderProcessSpec } from '../../harness/provision/processSpec.ts';
import { UserError } from '../../harness/util/errors.ts';

const work = mkdtempSync(join(tmpdir(), 'fluidcap-process-unit-'));
const SHELLS = ['/bin/sh', '/bin/bash'].filter((s) => existsSync(s));

// Characters a shell treats specially, plus plain ones, line ends, and non-ASCII.
const ALPHABET = [...`abcXYZ019 _-./:=,+@%~*?[]{}()<>|&;!#$\`'"\\\t\n`, 'é', '🙂', '\u202e', '\u0001'];

function randomWord(rng: { next(): number }): string {
  const n = Math.floor(rng.next() * 12);
  let w = '';
  for (let i = 0; i < n; i++) w += ALPHABET[Math.floor(rng.next() * ALPHABET.length)];
  return w;
}

test('shellQuote (fuzz): 2000 random words read back exactly by sh and bash, and a safe word stays bare', () => {
  const rng = createRng(29);
  const words = Array.from({ length: 2000 }, () => randomWord(rng));
  words.push('', "'", "''", '-n', '--', '$(touch /tmp/pwned)', '`id`', '~', '~/x');
  for (const sh of SHELLS) {
    // printf repeats its format for every argument: each word comes back NUL-terminated.
    const out = execFileSync(sh, ['-c', `printf '%s\\0' ${shellJoin(words)}`], { maxBuffer: 1 << 24 });
    assert.equal(out.toString('utf8').split('\0').slice(0, -1), words, sh);
  }
  assert.is(shellQuote('/opt/vllm/bin/vllm'), '/opt/vllm/bin/vllm');
  assert.is(shellQuote('~/x'), "'~/x'", '~ is never expanded by the shell');
});

// A stand-in engine: writes the argv and environment it was started with, then waits.
const RECORDER = join(work, 'recorder.mjs');
writeFileSync(RECORDER, `import { writeFileSync } from 'node:fs';
writeFileSync(process.env.RECORD_TO, JSON.stringify({ argv: process.argv.slice(2), env: process.env }));
setInterval(() => {}, 1000);
`);

function startLocally(dir: string, labels: string, argv: string[], stdin: string) {
  // As over SSH: the whole argv as one command line, parsed by the remote side's shell.
  return spawnSync('/bin/sh', ['-c', shellJoin(startScript(dir, labels, argv))], { input: stdin, encoding: 'utf8' });
}

function stop(dir: string, graceS: number) {
  return parseStopOutcome(execFileSync('/bin/sh', ['-c', shellJoin(stopScript(dir, graceS))], { encoding: 'utf8' }));
}

function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

async function until(cond: () => boolean, what: string) {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 50));
  assert.ok(cond(), what);
}

test('start script (fuzz): hostile argv words, labels and environment values reach the engine exactly; the group runs in a new session', async () => {
  const rng = createRng(7);
  const hostile = Array.from({ length: 60 }, () => randomWord(rng)).map((w) => w.replace(/\n/g, ' '));
  hostile.push('$(touch pwned)', '; touch pwned', "'", '"', '--');
  const dir = join(work, 'state', 'fuzz-run');
  const record = join(work, 'record.json');
  const labels = formatLabels({ runId: 'fuzz-run', name: "x'; touch pwned; '", engine: 'sim', port: 1, labels: { a: '$(id)' }, argv: hostile, startedAt: 'now' });
  const env = { RECORD_TO: record, ODD: "a 'b' \"c\" $HOME `id` \\ ~ *", EMPTY: '' };
  const r = startLocally(dir, labels, [process.execPath, RECORDER, ...hostile], envLines(env, (n) => n));
  assert.is(r.status, 0, r.stderr);
  const pgid = parsePid(r.stdout);
  assert.ok(pgid !== null, r.stdout);
  await until(() => existsSync(record), 'the engine started and recorded its argv');
  const seen = JSON.parse(readFileSync(record, 'utf8')) as { argv: string[]; env: Record<string, string> };
  assert.equal(seen.argv, hostile);
  assert.is(seen.env.ODD, env.ODD);
  assert.is(seen.env.EMPTY, '');
  assert.is(seen.env.FLUIDCAP_ENGINE_STATE, dir, 'every process of the group carries its state directory');
  assert.equal(parseLabels(readFileSync(join(dir, 'labels.json'), 'utf8')), JSON.parse(labels));
  assert.not.ok(existsSync(join(work, 'pwned')) || existsSync('pwned'), 'nothing was executed by a shell');
  assert.ok(groupAlive(pgid!));
  assert.is(Number(execFileSync('ps', ['-o', 'sid=', '-p', String(pgid)], { encoding: 'utf8' }).trim()), pgid, 'the leader heads its own session');
  // A second start of the same run is refused while the first runs.
  const again = startLocally(dir, labels, ['true'], '');
  assert.is(again.status, 91, again.stderr);
  assert.equal(stop(dir, 5), { kind: 'stopped', pgid: pgid!, killed: false });
  assert.not.ok(groupAlive(pgid!), 'group gone');
  assert.not.ok(existsSync(dir), 'state directory removed');
});

test('stop script: an engine ignoring SIGTERM is killed after the grace; a group id reused by a process without the marker is left alone', async () => {
  const dir = join(work, 'state', 'stubborn');
  const r = startLocally(dir, '{}', ['sh', '-c', 'trap "" TERM; while :; do sleep 1; done'], '');
  const pgid = parsePid(r.stdout)!;
  assert.ok(groupAlive(pgid));
  const exitCode = (d: string, g: number) => execFileSync('/bin/sh', ['-c', shellJoin(exitCodeScript(d, g))], { encoding: 'utf8' }).trim();
  assert.is(exitCode(dir, pgid), 'running');
  const t0 = performance.now();
  assert.equal(stop(dir, 1), { kind: 'stopped', pgid, killed: true });
  assert.ok(performance.now() - t0 >= 1000, 'waited for the grace before SIGKILL');
  assert.not.ok(groupAlive(pgid));

  // An engine that ends on its own leaves its exit code; its group is then gone.
  const ends = join(work, 'state', 'ends');
  const e = startLocally(ends, '{}', ['sh', '-c', 'exit 3'], '');
  const endsPgid = parsePid(e.stdout)!;
  await until(() => existsSync(join(ends, 'exit')), 'exit file written');
  assert.is(exitCode(ends, endsPgid), '3');
  assert.equal(stop(ends, 1), { kind: 'gone', pgid: endsPgid });

  // Someone else's group under the id a stale pid file names.
  const other = spawn('sleep', ['30'], { detached: true, stdio: 'ignore' });
  await until(() => other.pid !== undefined && groupAlive(other.pid), 'other group started');
  const stale = join(work, 'state', 'stale');
  mkdirSync(stale, { recursive: true });
  writeFileSync(join(stale, 'pid'), `${other.pid}\n`);
  try {
    assert.equal(stop(stale, 1), { kind: 'stale', pgid: other.pid! });
    assert.ok(groupAlive(other.pid!), 'not ours: not signalled');
    assert.not.ok(existsSync(stale), 'the stale state directory is removed');
  } finally {
    other.kill('SIGKILL');
  }
  // A directory whose pid file holds no process id is removed, nothing is signalled.
  mkdirSync(join(work, 'state', 'junk'), { recursive: true });
  writeFileSync(join(work, 'state', 'junk', 'pid'), '-1 0\n');
  assert.equal(stop(join(work, 'state', 'junk'), 1), { kind: 'none' });
});

test('check and list scripts: a missing program, a non-executable file, an unreadable file; listing skips links', () => {
  const run = (argv: string[]) => execFileSync('/bin/sh', ['-c', shellJoin(argv)], { encoding: 'utf8' }).trim().split('\n');
  writeFileSync(join(work, 'plain.txt'), 'x');
  assert.equal(run(checkScript('sh', [join(work, 'plain.txt'), join(work, 'nope.gguf')])), ['program ok', 'file 0 ok', 'file 1 unreadable']);
  assert.equal(run(checkScript('no-such-program-fluidcap', [])), ['program missing']);
  assert.equal(run(checkScript(join(work, 'plain.txt'), [])), ['program not-executable']);
  assert.equal(run(checkScript('/nonexistent/bin/x', [])), ['program missing']);
  const root = join(work, 'root');
  mkdirSync(join(root, 'run-1'), { recursive: true });
  mkdirSync(join(root, 'a b'), { recursive: true });
  execFileSync('ln', ['-s', '/etc', join(root, 'link')]);
  assert.equal(run(listScript(root)).sort(), ['a b', 'run-1']);
  assert.equal(run(listScript(join(work, 'no-root'))), ['']);
});

test('state formats: labels round trip and refusals, pid files, run directory names, stop outcomes, environment lines', () => {
  const l = { runId: 'r-1', name: 'fluidcap-r-1-sim', engine: 'sim', port: 8000, labels: { 'fluidcap.run': 'r-1' }, argv: ['a', 'b c'], startedAt: '2026-11-26T10:00:00Z' };
  assert.equal(parseLabels(formatLabels(l)), { format: 'fluidcap-engine-process/1', ...l });
  assert.ok('problem' in parseLabels('{'));
  assert.ok('problem' in parseLabels(JSON.stringify({ ...JSON.parse(formatLabels(l)), runId: '../x' })));
  assert.ok('problem' in parseLabels(JSON.stringify({ ...JSON.parse(formatLabels(l)), argv: [1] })));
  assert.ok('problem' in parseLabels(JSON.stringify({ ...l, format: 'other/1' })));
  assert.is(parsePid('1234\n'), 1234);
  for (const bad of ['', '1', '-5', '12a', '1 2', '99999999999']) assert.is(parsePid(bad), null, bad);
  assert.is(stateDirOf('/home/u/.cache/fluidcap/engines/', 'run-1'), '/home/u/.cache/fluidcap/engines/run-1');
  for (const bad of ['..', '../x', 'a/b', '', '.hidden']) assert.throws(() => stateDirOf('/r', bad), /cannot name a state directory/, bad);
  assert.throws(() => stateDirOf('relative', 'r'), /absolute/);
  assert.equal(stateEntries('run-1\n..\na b\nrun-2\n\u001b[31m\n'), { runIds: ['run-1', 'run-2'], refused: ['..', 'a b', '\\u001b[31m'] });
  assert.equal(stateEntries('run-1\nrun-2\n', 'run-2').runIds, ['run-2']);
  assert.equal(parseStopOutcome('stopped 42 killed\n'), { kind: 'stopped', pgid: 42, killed: true });
  assert.equal(parseStopOutcome('remaining 42'), { kind: 'remaining', pgid: 42 });
  assert.is(parseStopOutcome('stopped x'), null);
  assert.is(envLines({ A: '1', B: 'x y' }, (n) => n), 'A=1\nB=x y\n');
  assert.throws(() => envLines({ T: 'a\nb' }, (n) => `target.secrets.${n}`), (e: Error) => e instanceof UserError && /target\.secrets\.T: the value must not contain a line break/.test(e.message) && !e.message.includes('a\nb'));
});

const problems = (raw: unknown) => {
  const r = targetSchema.safeParse(raw);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};

test('recipe rules: runtime process needs process.command, takes no image, and its program is a name or an absolute path', () => {
  const base = { engine: 'llamacpp', model: 'm', llamacpp: { modelFile: '/models/m.gguf' } };
  assert.equal(targetSchema.parse({ engine: 'sim', model: 'tiny' }).runtime, 'container');
  assert.equal(problems({ ...base, runtime: 'process', process: { command: ['/opt/llama/bin/llama-server'] } }), []);
  assert.equal(problems({ ...base, runtime: 'process', process: { command: ['llama-server'] } }), []);
  assert.equal(problems({ ...base, runtime: 'process', process: { command: ['~/llama.cpp/build/bin/llama-server'] } }), []);
  assert.equal(problems({ ...base, runtime: 'process' }), ['process.command: is required for runtime process (the program that starts the engine on the host, e.g. [/opt/llama.cpp/bin/llama-server])']);
  assert.equal(problems({ ...base, process: { command: ['x'] } }), ['process: is only for runtime process (set target.runtime: process)']);
  assert.equal(problems({ ...base, runtime: 'process', image: 'a/b:c', process: { command: ['x'] } }), ['image: must be absent for runtime process (the engine runs from target.process.command, not an image)']);
  assert.equal(problems({ engine: 'endpoint', endpoint: { url: 'http://x:1' }, runtime: 'process' }), ['runtime: must be container (or left out) for engine endpoint (nothing is launched)']);
  assert.equal(problems({ engine: 'vllm', model: 'm', runtime: 'process', process: { command: ['/opt/v/bin/vllm', 'serve'] } }), [], 'vllm needs no image when it runs as a process');
  for (const [bad, why] of [['bin/server', /not a relative path/], ['-c', /not an option/], ['/opt/../bin/x', /"\.\." segments/], ['a b', /letters, digits/], ['$(id)', /letters, digits/], ['', /Too small|must not be empty/]] as const) {
    const p = problems({ ...base, runtime: 'process', process: { command: [bad] } });
    assert.ok(p.length === 1 && p[0].startsWith('process.command.0: ') && why.test(p[0]), `${JSON.stringify(bad)}: ${p.join('; ')}`);
  }
  assert.equal(problems({ ...base, runtime: 'process', process: { command: ['x', 'a\0b'] } }), ['process.command.1: must not contain a NUL character']);
});

test('argv shared with containers: the same flags, host paths for mounted files, GPUs as CUDA_VISIBLE_DEVICES, vllm serve takes the model first', () => {
  const sim = { engine: 'sim', model: 'tiny', port: 8123, sim: { timeScale: 0.5 }, engineArgs: { maxNumSeqs: 8, extraArgs: ['--seed-extra'] } };
  const simContainer = renderContainerSpec(targetSchema.parse(sim), { runId: 'r1' })!;
  const simProcess = renderProcessSpec(targetSchema.parse({ ...sim, runtime: 'process', process: { command: ['node', '/opt/fluidcap/bin/fluidcap.js', 'sim', 'serve'] } }), { runId: 'r1' });
  assert.equal(simProcess.argv, simContainer.argv);
  assert.equal(simProcess.labels, simContainer.labels);
  assert.is(simProcess.name, simContainer.name);

  const llama = { engine: 'llamacpp', model: 'stories', llamacpp: { modelFile: '~/models/s.gguf' }, engineArgs: { slots: 2, ctxSize: 1024 } };
  const llamaContainer = renderContainerSpec(targetSchema.parse(llama), { runId: 'r2' })!;
  const llamaProcess = renderProcessSpec(targetSchema.parse({ ...llama, runtime: 'process', process: { command: ['/opt/llama/llama-server'] } }), { runId: 'r2' });
  assert.equal(llamaProcess.argv, llamaContainer.argv.map((a) => (a === '/models/s.gguf' ? '~/models/s.gguf' : a)));

  const vllm = { engine: 'vllm', model: 'meta-llama/Meta-Llama-3-8B', gpus: [2, 3], tensorParallel: 2, engineArgs: { maxNumSeqs: 64, loadFormat: 'dummy' } };
  const vllmContainer = renderContainerSpec(targetSchema.parse({ ...vllm, image: 'vllm/vllm-openai:v0.8.5' }), { runId: 'r3' })!;
  const python = renderProcessSpec(targetSchema.parse({ ...vllm, runtime: 'process', process: { command: ['/opt/v/bin/python', '-m', 'vllm.entrypoints.openai.api_server'], version: 'v0.8.5' } }), { runId: 'r3', hostHfCache: '/data/hf' });
  assert.equal(python.argv, vllmContainer.argv, 'the image entrypoint and the python module take the same argv');
  assert.equal(python.env, { HF_HOME: '/data/hf', VLLM_USE_V1: '0', CUDA_VISIBLE_DEVICES: '2,3' });
  const serve = renderProcessSpec(targetSchema.parse({ ...vllm, runtime: 'process', process: { command: ['/opt/v/bin/vllm', 'serve'] } }), { runId: 'r3' });
  assert.is(serve.argv[0], 'meta-llama/Meta-Llama-3-8B');
  assert.not.ok(serve.argv.includes('--model'), "vLLM 0.8's vllm serve refuses --model");
  assert.equal(serve.env, { CUDA_VISIBLE_DEVICES: '2,3' }, 'no version: nothing version-dependent; no hfCache: the host default');
  assert.is(serve.basis.versionSource, 'unknown');
  assert.throws(
    () => renderProcessSpec(targetSchema.parse({ ...vllm, runtime: 'process', process: { command: ['/opt/v/bin/vllm', 'serve'], version: '0.11.0' } }), { runId: 'r3' }),
    /vLLM 0\.11\.0 \(as target\.process\.version says\), command \/opt\/v\/bin\/vllm serve no longer has/,
  );
  assert.is(
    formatProcessCommand({ env: { A: "it's" }, secretEnv: [{ name: 'HF_TOKEN', fromEnv: 'MY_TOKEN' }], command: ['~/venv/bin/vllm', 'serve'], argv: ['m', '--x', 'a b'] }, ['srun', '--jobid=7']),
    `env A='it'\\''s' HF_TOKEN="$MY_TOKEN" setsid srun --jobid=7 ~/venv/bin/vllm serve m --x 'a b'`,
  );
});

test.run();
