// Hostile and careless recipes: every problem found while parsing, before a results directory
// exists, with the recipe's own wording and a bounded quote of the bad value.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseRecipe, type RecipeSource } from '../../harness/recipe/parse.ts';
import { loadRecipe } from '../../harness/recipe/load.ts';
import { loadInventory } from '../../harness/provision/inventory.ts';

const ROOT = resolve(import.meta.dirname, '..', '..');
const dir = mkdtempSync(join(tmpdir(), 'fluidcap-hostile-recipe-'));
const childEnv = { ...process.env };
delete childEnv.FORCE_COLOR;
delete childEnv.NO_COLOR;
const fluidcap = (args: string[], env: NodeJS.ProcessEnv = childEnv) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
    execFile(process.execPath, [join(ROOT, 'bin', 'fluidcap.js'), ...args], { cwd: dir, env, timeout: 120_000 }, (err, stdout, stderr) =>
      done({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
const noStack = (text: string) => assert.not.match(text, /^\s+at /m, `stack trace printed:\n${text}`);

/** Writes a recipe file (YAML written as JSON, which YAML reads) and returns its path. */
function recipeFile(name: string, body: unknown, sub = 'recipes'): string {
  mkdirSync(join(dir, sub), { recursive: true });
  const path = join(dir, sub, name);
  writeFileSync(path, typeof body === 'string' ? body : JSON.stringify(body, null, 1));
  return path;
}
async function loadProblems(path: string): Promise<string> {
  try {
    await loadRecipe(path);
  } catch (err) {
    assert.is((err as Error).name, 'UserError', (err as Error).stack);
    return (err as Error).message;
  }
  assert.unreachable('expected the recipe to be refused');
  return '';
}

const ALIAS_BOMB = [
  'a: &a [x, x, x, x, x, x, x, x, x]',
  ...'bcdefghi'.split('').map((n, i) => `${n}: &${n} [${Array(9).fill(`*${'abcdefgh'[i]}`).join(', ')}]`),
].join('\n');

const source: RecipeSource = { file: 'recipes/x.yaml', dir: '/nowhere', sloText: {} };

const minimal = (over: { target?: Record<string, unknown>; [k: string]: unknown } = {}) => ({
  name: 'unit',
  workload: { lengths: { preset: 'arxiv-4k' } },
  slo: { fluidity: { tbtDeadline: '25ms' } },
  ...over,
  target: { engine: 'sim', model: 'llama-3-8b', gpuProfile: 'h100-sxm-80gb', ...over.target },
});

function problemsOf(raw: unknown): string[] {
  const r = parseRecipe(raw, source);
  assert.not.ok(r.ok, 'expected the recipe to be refused');
  return r.ok ? [] : r.problems;
}

const TIMER = 'must be a duration of at most 2147483.647s (about 24.8 days, the longest timer Node can set)';

test('durations that overflow a timer, infinities and sub-microsecond deadlines are refused', () => {
  assert.equal(problemsOf(minimal({ target: { readyTimeout: '1000h' } })), [`recipes/x.yaml: target.readyTimeout ${TIMER}, got "1000h" (string)`]);
  assert.equal(problemsOf(minimal({ target: { readyTimeout: '1e309s' } })), [`recipes/x.yaml: target.readyTimeout ${TIMER}, got "1e309s" (string)`]);
  assert.equal(problemsOf(minimal({ search: { probe: { duration: 1e309 } } })), ["recipes/x.yaml: search.probe.duration must be a duration such as 25ms, 2s or 10m, got Infinity (number)"]);
  assert.equal(problemsOf(minimal({ profile: { noiseFloor: '1e-320s' } })), ['recipes/x.yaml: profile.noiseFloor must be a duration of 0 or at least 1us, got "1e-320s" (string)']);
  const slo = problemsOf(minimal({ slo: { fluidity: { tbtDeadline: '1e-320' } } }));
  assert.is(slo.length, 1);
  assert.match(slo[0], /^recipes\/x\.yaml: slo\.fluidity\.tbtDeadline must be a duration/);
  assert.ok(parseRecipe(minimal({ target: { readyTimeout: '596h' } }), source).ok, '596 h still fits a timer');
});

test('probe --duration without its unit is refused before the recipe is read or anything is sent', async () => {
  const r = await fluidcap(['probe', join(ROOT, 'recipes', 'quickstart.yaml'), '--qps', '1', '--duration', '30', '--url', 'http://127.0.0.1:9']);
  assert.is(r.code, 2, r.stderr);
  assert.is(r.stderr.trim(), 'fluidcap: --duration needs a unit: 30 alone could mean 30ms or 30s (write "30ms" or "30s"), got "30" (string)');
});

test("the recipe's own messages survive (name, image, secret names); long values are cut", () => {
  const p = problemsOf(minimal({ name: 'bad name!', target: { engine: 'vllm', image: 'Bad Image', model: 'm', secrets: { 'bad-name': 'HF_TOKEN' } } }));
  assert.equal(p, [
    'recipes/x.yaml: name must be letters, digits, ".", "_" or "-", got "bad name!" (string)',
    'recipes/x.yaml: target.image must be an image reference such as vllm/vllm-openai:v0.8.5 or repo@sha256:<64 hex>, got "Bad Image" (string)',
    'recipes/x.yaml: target.secrets has the name "bad-name" (string), which must be an environment variable name such as HF_TOKEN',
  ]);
  for (const line of p) assert.not.match(line, /valid regex|Invalid/);
  const huge = problemsOf(minimal({ name: 'x'.repeat(5_000_000), description: 5 }));
  assert.is(huge.length, 2);
  assert.match(huge[0], /^recipes\/x\.yaml: name must be at most 64 characters \(it names the run directory and the container\), got "x{80}"… \(5000000 characters\) \(string\)$/);
  const longImage = problemsOf(minimal({ target: { engine: 'vllm', model: 'm', image: `\u001b]0;t\u0007${'A'.repeat(1_000_000)}` } }));
  assert.ok(longImage.every((l) => l.length < 400), `a message is ${Math.max(...longImage.map((l) => l.length))} characters`);
  assert.ok(longImage.every((l) => !/[\u0000-\u001f]/.test(l)), 'control characters are escaped');
});

test('a trace path may not leave the recipe directory; a trace error never quotes the file', async () => {
  writeFileSync(join(dir, 'outside.csv'), 'num_prefill_tokens,num_decode_tokens\n10,10\n');
  const escape = await loadProblems(recipeFile('escape.yaml', minimal({ workload: { lengths: { trace: '../../../../../../etc/passwd', maxTotalTokens: 4096 } } })));
  assert.match(escape, /workload\.lengths\.trace must stay inside the recipe's directory \(use an absolute path to name a file elsewhere\), got "\.\.\/\.\.\/\.\.\/\.\.\/\.\.\/\.\.\/etc\/passwd" \(string\)/);
  const sibling = await loadProblems(recipeFile('sibling.yaml', minimal({ workload: { lengths: { trace: '../outside.csv', maxTotalTokens: 4096 } } })));
  assert.match(sibling, /must stay inside the recipe's directory/);
  // An absolute path is allowed by design: the file is read, and only its shape is reported.
  writeFileSync(join(dir, 'secret.txt'), 'root:SECRET-CONTENT:0:0\n');
  const absolute = await loadProblems(recipeFile('absolute.yaml', minimal({ workload: { lengths: { trace: join(dir, 'secret.txt'), maxTotalTokens: 4096 } } })));
  assert.match(absolute, /workload\.lengths\.trace has no num_prefill_tokens and num_decode_tokens columns/);
  assert.not.match(absolute, /SECRET-CONTENT|root:/);
  const ok = await loadRecipe(recipeFile('abs-ok.yaml', minimal({ workload: { lengths: { trace: join(dir, 'outside.csv'), maxTotalTokens: 4096 } } })));
  assert.is(ok.name, 'unit');
  const devicePath = await loadProblems(recipeFile('dev.yaml', minimal({ workload: { lengths: { trace: '/dev/zero', maxTotalTokens: 4096 } } })));
  assert.match(devicePath, /must be a CSV file, not a directory or device/);
});

test('a YAML syntax error quoting escape sequences prints them escaped', async () => {
  const message = await loadProblems(recipeFile('esc.yaml', 'name: x\na: *\u001b]0;owned\u0007\u009b2J\n'));
  assert.match(message, /esc\.yaml:\d+:\d+ YAML /);
  assert.not.match(message, /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
});

test('a YAML alias bomb in a recipe or an inventory is one clear message', async () => {
  const recipe = await loadProblems(recipeFile('bomb.yaml', `name: bomb\n${ALIAS_BOMB}\n`));
  assert.match(recipe, /bomb\.yaml: YAML aliases \(\*name\) expand too often \(more than 100 times/);
  writeFileSync(join(dir, 'inv.yaml'), `${ALIAS_BOMB}\nhosts: [*i]\n`);
  try {
    await loadInventory(join(dir, 'inv.yaml'));
    assert.unreachable();
  } catch (err) {
    assert.is((err as Error).name, 'UserError');
    assert.match((err as Error).message, /inv\.yaml: YAML aliases \(\*name\) expand too often/);
  }
  const r = await fluidcap(['run', join(dir, 'recipes', 'bomb.yaml'), '--dry-run']);
  assert.is(r.code, 2, r.stderr);
  assert.match(r.stderr, /^fluidcap: .*bomb\.yaml: YAML aliases/);
  noStack(r.stderr);
});

test('an undefined YAML alias is named as such, not as an alias bomb (recipe and inventory)', async () => {
  const recipe = await loadProblems(recipeFile('undef-alias.yaml', `name: undef\ndescription: *nope\n`));
  assert.match(recipe, /undef-alias\.yaml: YAML alias \*nope names no anchor/);
  assert.not.match(recipe, /alias bomb|expand too often/);
  writeFileSync(join(dir, 'inv-undef.yaml'), `hosts: [*missing]\n`);
  try {
    await loadInventory(join(dir, 'inv-undef.yaml'));
    assert.unreachable();
  } catch (err) {
    assert.is((err as Error).name, 'UserError');
    assert.match((err as Error).message, /inv-undef\.yaml: YAML alias \*missing names no anchor/);
  }
});

test('what the engine or this machine would refuse is reported at validation, before a results directory', async () => {
  const extra = await loadProblems(recipeFile('extra.yaml', minimal({ target: { engineArgs: { extraArgs: ['--bogus-flag', '3'] } } })));
  assert.match(extra, /target\.engineArgs\.extraArgs: the simulated engine would refuse to start: unknown flag --bogus-flag, got \["--bogus-flag","3"\] \(array\)/);
  const badValue = await loadProblems(recipeFile('extra-value.yaml', minimal({ target: { engineArgs: { extraArgs: ['--num-gpu-blocks-override', '-4'] } } })));
  assert.match(badValue, /target\.engineArgs\.extraArgs: the simulated engine would refuse to start: --num-gpu-blocks-override/);
  const tooLong = await loadProblems(recipeFile('long.yaml', minimal({ target: { engineArgs: { maxModelLen: 100000 } } })));
  assert.match(tooLong, /target\.engineArgs\.maxModelLen must be <= llama-3-8b's context of 8192 tokens \(target\.engineArgs\.ropeScaling stretches it\), got 100000 \(number\)/);
  const vllm = await loadProblems(
    recipeFile('vllm-long.yaml', minimal({ target: { engine: 'vllm', image: 'vllm/vllm-openai:v0.8.5', model: 'meta-llama/Meta-Llama-3-8B', engineArgs: { maxModelLen: 100000 } } })),
  );
  assert.match(vllm, /target\.engineArgs\.maxModelLen must be <= llama-3-8b's context of 8192 tokens/);
  const secret = recipeFile('secret.yaml', minimal({ target: { secrets: { HF_TOKEN: 'FLUIDCAP_TEST_UNSET_SECRET' } } }));
  try {
    await loadRecipe(secret, { env: {} });
    assert.unreachable();
  } catch (err) {
    assert.match((err as Error).message, /target\.secrets\.HF_TOKEN names the environment variable FLUIDCAP_TEST_UNSET_SECRET, which is not set here/);
  }
  assert.ok(await loadRecipe(secret), 'a dry run (no environment given) shows the plan');
  assert.ok(await loadRecipe(secret, { env: { FLUIDCAP_TEST_UNSET_SECRET: 'x' } }));
  // `fluidcap run` refuses before creating results/<run>.
  const out = join(dir, 'results');
  const env = { ...childEnv };
  delete env.FLUIDCAP_TEST_UNSET_SECRET;
  for (const file of [secret, join(dir, 'recipes', 'extra.yaml')]) {
    const r = await fluidcap(['run', file, '--out', out], env);
    assert.is(r.code, 2, r.stderr);
    noStack(r.stderr);
    assert.not.ok(existsSync(out), `${out} was created for ${file}`);
  }
});

test.after(() => rmSync(dir, { recursive: true, force: true }));
test.run();
