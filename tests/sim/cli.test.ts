// `fluidcap sim serve` as a real child process: bad flags fail at start with one clear message and
// a non-zero exit; a good start prints the listening line, serves, and exits 0 on SIGTERM.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn, type ChildProcess } from 'node:child_process';

const CLI = ['bin/fluidcap.js', 'sim', 'serve'];

// A running CLI child with its collected output and a promise of how it ended.
interface Child {
  proc: ChildProcess;
  stdout: string;
  stderr: string;
  ended: Promise<{ exitCode: number | null; stdout: string; stderr: string }>;
}

// (execa is ESM-only through unicorn-magic, which uvu's tsx require hook cannot load, hence node:child_process.)
function run(args: string[]): Child {
  const proc = spawn(process.execPath, [...CLI, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const child: Child = { proc, stdout: '', stderr: '', ended: null as never };
  proc.stdout!.on('data', (b) => (child.stdout += b.toString()));
  proc.stderr!.on('data', (b) => (child.stderr += b.toString()));
  const killer = setTimeout(() => proc.kill('SIGKILL'), 30_000);
  child.ended = new Promise((resolve) =>
    proc.on('close', (code) => {
      clearTimeout(killer);
      resolve({ exitCode: code, stdout: child.stdout, stderr: child.stderr });
    }),
  );
  return child;
}

async function failStart(args: string[]) {
  const r = await run(args).ended;
  assert.is.not(r.exitCode, 0, `exit code for ${args.join(' ')}`);
  assert.not.match(r.stderr, /\n\s+at /, 'no stack trace');
  return r;
}

function waitForLine(child: Child, re: RegExp): Promise<RegExpExecArray> {
  return new Promise((resolve, reject) => {
    const check = () => {
      const m = re.exec(child.stdout);
      if (m) {
        child.proc.stdout!.off('data', check);
        resolve(m);
      }
    };
    child.proc.stdout!.on('data', check);
    check();
    void child.ended.then((r) => reject(new Error(`exited ${r.exitCode} before ${re}\n${r.stdout}\n${r.stderr}`)));
  });
}

test('unknown model and GPU, negative time scale: one message naming each flag, exit 2', async () => {
  const r = await failStart(['--model', 'gpt-9', '--gpu', 'x100', '--time-scale', '-1', '--port', '0']);
  assert.is(r.exitCode, 2);
  assert.match(r.stderr, /--time-scale must be > 0, got -1 \(number\)/);
  assert.match(r.stderr, /--model "gpt-9" \(string\) is not in the catalog/);
  assert.match(r.stderr, /unknown GPU profile "x100"/);
});

test('a model that does not fit in the GPU at the given TP fails at start', async () => {
  const r = await failStart(['--model', 'meta-llama/Llama-2-70b-hf', '--gpu', 'l40s-48gb', '--tensor-parallel', '1', '--port', '0']);
  assert.is(r.exitCode, 2);
  assert.match(r.stderr, /--model llama-2-70b does not fit: 128\.5 GiB of bf16 weights per GPU at --tensor-parallel 1/);
});

test('--fault-exit-at-start exits 1 with an out-of-memory message, as a failing engine does', async () => {
  const r = await failStart(['--fault-exit-at-start', '--port', '0']);
  assert.is(r.exitCode, 1);
  assert.match(r.stderr, /CUDA out of memory/);
});

test('serve: listening line, /health and /v1/models answer, SIGTERM exits 0', async () => {
  const child = run(['--port', '0', '--model', 'meta-llama/Meta-Llama-3-8B', '--scheduler', 'sarathi']);
  const m = await waitForLine(child, /fluidcap sim: listening on (http:\/\/127\.0\.0\.1:(\d+)) \(model meta-llama\/Meta-Llama-3-8B, gpu h100-sxm-80gb, scheduler sarathi\)\n/);
  assert.is((await fetch(`${m[1]}/health`)).status, 200);
  const models = (await (await fetch(`${m[1]}/v1/models`)).json()) as { data: Array<{ id: string; max_model_len: number }> };
  assert.is(models.data[0].id, 'meta-llama/Meta-Llama-3-8B');
  assert.is(models.data[0].max_model_len, 8192);
  child.proc.kill('SIGTERM');
  const r = await child.ended;
  assert.is(r.exitCode, 0);
});

test('--start-delay: port bound but requests held until ready (as vLLM), then /health 200', async () => {
  const child = run(['--port', '0', '--start-delay', '1.5s']);
  const loading = await waitForLine(child, /port (\d+) bound/);
  const url = `http://127.0.0.1:${loading[1]}`;
  const t0 = performance.now();
  const early = await Promise.race([
    fetch(`${url}/health`).then((r) => r.status),
    new Promise<string>((r) => setTimeout(() => r('pending'), 300)),
  ]);
  assert.is(early, 'pending', 'not answered while loading');
  const status = (await fetch(`${url}/health`)).status;
  const waitedMs = performance.now() - t0;
  assert.is(status, 200);
  assert.ok(waitedMs > 500, `answered after the delay (${waitedMs.toFixed(0)} ms)`);
  child.proc.kill('SIGTERM');
  assert.is((await child.ended).exitCode, 0);
});

test('--fault-crash-after: the process dies (exit 1) after N finished requests', async () => {
  const child = run(['--port', '0', '--time-scale', '0.05', '--fault-crash-after', '2']);
  const m = await waitForLine(child, /listening on (http:\/\/\S+)/);
  for (let i = 0; i < 2; i++) {
    const r = await fetch(`${m[1]}/v1/completions`, { method: 'POST', body: JSON.stringify({ prompt: 'a b', max_tokens: 3 }) });
    assert.is(r.status, 200);
    await r.text();
  }
  const r = await child.ended;
  assert.is(r.exitCode, 1);
  assert.match(r.stdout, /simulated crash after 2 requests/);
});

test.run();
