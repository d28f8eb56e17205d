// A secret canary through a whole `fluidcap run` (the simulated engine as a local process, a recipe
// with `secrets:`): the secret's value is set in the environment, and must appear in no file of the
// run directory (plainly or base64-encoded), in neither stdout nor stderr, and not in `--dry-run`.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FAST_RECIPE, fluidcap, onlyRunDir } from './support.ts';

const work = mkdtempSync(join(tmpdir(), 'fluidcap-canary-'));
const CANARY = `canary-${randomBytes(12).toString('hex')}`;
const VAR = 'FLUIDCAP_CANARY_SECRET';
const recipe = join(work, 'canary.yaml');
// The fast test recipe with two secrets: one under its own name, one read from another variable.
writeFileSync(
  recipe,
  readFileSync(FAST_RECIPE, 'utf8')
    .replace(/^name: fast$/m, 'name: canary')
    .replace(/^  engine: sim$/m, `  engine: sim\n  secrets: { HF_TOKEN: ${VAR}, ${VAR}: ${VAR} }`),
);
// The same recipe as a container (a dry run only): its plan prints the docker run line with secrets.
const containerRecipe = join(work, 'canary-container.yaml');
writeFileSync(containerRecipe, readFileSync(recipe, 'utf8').replace(/^  engine: sim$/m, '  engine: sim\n  image: fluidcap/sim:dev'));
const forms = [CANARY, Buffer.from(CANARY).toString('base64'), Buffer.from(CANARY).toString('base64url'), encodeURIComponent(CANARY).toUpperCase()];

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}
const assertClean = (what: string, text: string) => {
  for (const f of forms) assert.not.ok(text.includes(f), `the canary (${f}) is in ${what}`);
};

test('the canary is in no file of the run directory and not in stdout or stderr', async () => {
  process.env[VAR] = CANARY;
  const outDir = join(work, 'results');
  const r = await fluidcap(['run', recipe, '--out', outDir], { timeoutMs: 150_000 });
  assert.is(r.code, 0, r.stderr.slice(-3000));
  assertClean('stdout', r.stdout);
  assertClean('stderr', r.stderr);
  const files = filesUnder(onlyRunDir(outDir));
  assert.ok(files.some((f) => f.endsWith('timelines.jsonl')) && files.some((f) => f.endsWith('manifest.json')), files.join(', '));
  for (const f of files) assertClean(f, readFileSync(f).toString('latin1'));
  // The recipe copy names the secrets, so the check above would see the value had it been inlined.
  assert.match(readFileSync(join(onlyRunDir(outDir), 'recipe.yaml'), 'utf8'), new RegExp(`HF_TOKEN: ${VAR}`));
});

test('the canary is not in --dry-run output (text and --json)', async () => {
  process.env[VAR] = CANARY;
  for (const file of [recipe, containerRecipe]) {
    for (const args of [['--dry-run'], ['--dry-run', '--json']]) {
      const r = await fluidcap(['run', file, ...args], { timeoutMs: 60_000 });
      assert.is(r.code, 0, r.stderr);
      assertClean(`run ${file} ${args.join(' ')} stdout`, r.stdout);
      assertClean(`run ${file} ${args.join(' ')} stderr`, r.stderr);
      if (file === containerRecipe && args.length === 1) {
        assert.match(r.stdout, /docker run .* -e HF_TOKEN -e FLUIDCAP_CANARY_SECRET /, 'the dry run names the secrets');
        assert.match(r.stdout, /HF_TOKEN="\$FLUIDCAP_CANARY_SECRET" docker run/);
      }
    }
  }
});

test('without the variable set, the run is refused before a results directory exists', async () => {
  delete process.env[VAR];
  const outDir = join(work, 'refused');
  const r = await fluidcap(['run', recipe, '--out', outDir], { timeoutMs: 60_000 });
  assert.is(r.code, 2, r.stderr);
  assert.match(r.stderr, /target\.secrets\.HF_TOKEN names the environment variable FLUIDCAP_CANARY_SECRET, which is not set here/);
  assert.throws(() => readdirSync(outDir));
});

test.after(() => {
  delete process.env[VAR];
  rmSync(work, { recursive: true, force: true });
});
test.run();
