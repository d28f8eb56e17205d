// A recipe is validated in one pass: what the schema, the catalogs, the disk, the engine's flags,
// the run plan and the inventory can tell is reported in one error, so a user fixes everything
// before the next try.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadRunRecipe } from '../../harness/capacity/resolveRun.ts';

const dir = mkdtempSync(join(tmpdir(), 'fluidcap-one-pass-'));

async function problemsOf(file: string, opts: Parameters<typeof loadRunRecipe>[1]): Promise<string[]> {
  try {
    await loadRunRecipe(file, opts);
  } catch (err) {
    assert.is((err as Error).name, 'UserError', (err as Error).stack);
    return (err as Error).message.split('\n');
  }
  assert.unreachable('expected the recipe to be refused');
  return [];
}

test('a recipe the schema passes: catalog, plan, hosts and secrets are reported together', async () => {
  const file = join(dir, 'parsed.yaml');
  writeFileSync(
    file,
    [
      'name: parsed',
      'target:',
      '  engine: sim',
      '  image: fluidcap/sim:dev',
      '  host: gpu9',
      '  model: llama-3-8b',
      '  gpuProfile: h800-pcie',
      '  engineArgs: { maxModelLen: 4096 }',
      '  secrets: { HF_TOKEN: FLUIDCAP_TEST_UNSET_SECRET }',
      'workload:',
      '  lengths: { prompt: 256, output: 32 }',
      'profile:',
      '  promptLengths: [128, 65536]',
      'slo:',
      '  fluidity: { tbtDeadline: 25ms }',
    ].join('\n'),
  );
  const lines = await problemsOf(file, { env: {}, hosts: undefined });
  assert.is(lines[0], `${file} has 4 problems:`, lines.join('\n'));
  const want = [
    `${file}: target.gpuProfile must name a profile in gpu-profiles/`,
    `${file}: target.secrets.HF_TOKEN names the environment variable FLUIDCAP_TEST_UNSET_SECRET, which is not set here`,
    `${file}: profile.promptLengths[1] must be <= 4095 (the model's context 4096 minus 1 output token), got 65536`,
    `${file}: target.host is "gpu9" (string): pass an inventory with --hosts to say how to reach it`,
  ];
  for (const w of want) assert.ok(lines.some((l) => l.trim().startsWith(w)), `missing: ${w}\n${lines.join('\n')}`);
  // A dry run launches nothing: it neither reads secrets nor needs the inventory.
  const dry = await problemsOf(file, { hosts: 'unchecked' });
  assert.is(dry[0], `${file} has 2 problems:`, dry.join('\n'));
});

test('a recipe the schema refuses still has its names looked up, each problem once', async () => {
  const file = join(dir, 'unparsed.yaml');
  writeFileSync(
    file,
    [
      'name: unparsed',
      'target: { engine: sim, model: gpt-5, gpuProfile: h800-pcie, port: 99999, engineArgs: { maxModelLen: 4096 } }',
      'workload: { lengths: { trace: nowhere.csv, maxTotalTokens: 4096 } }',
      'search: { probe: { requestTimeout: 30 } }',
      'slo: { ttft: "p90 <= 2" }',
    ].join('\n'),
  );
  const lines = await problemsOf(file, { hosts: 'unchecked' });
  const paths = lines.slice(1).map((l) => /: (\S+) /.exec(l.slice(file.length))?.[1]);
  assert.equal(paths, ['target.port', 'search.probe.requestTimeout', 'slo.ttft.max', 'target.gpuProfile', 'target.model', 'workload.lengths.trace'], lines.join('\n'));
});

test('an endpoint whose apiKeyEnv is unset is refused before a run starts; set (or a dry run), it is not', async () => {
  const file = join(dir, 'endpoint.yaml');
  writeFileSync(
    file,
    [
      'name: endpoint',
      'target: { engine: endpoint, endpoint: { url: "http://127.0.0.1:9/v1", apiKeyEnv: FLUIDCAP_TEST_UNSET_KEY } }',
      'workload: { lengths: { prompt: 64, output: 8 } }',
      'slo: { fluidity: { tbtDeadline: 50ms } }',
    ].join('\n'),
  );
  const lines = await problemsOf(file, { env: {}, hosts: undefined });
  assert.ok(lines.some((l) => l.includes(`${file}: target.endpoint.apiKeyEnv names the environment variable FLUIDCAP_TEST_UNSET_KEY, which is not set here`)), lines.join('\n'));
  const ok = await loadRunRecipe(file, { env: { FLUIDCAP_TEST_UNSET_KEY: 'sk-test' }, hosts: undefined });
  assert.is(ok.target.endpoint?.apiKeyEnv, 'FLUIDCAP_TEST_UNSET_KEY');
  await loadRunRecipe(file, { hosts: 'unchecked' });
  // An empty value is no key either.
  assert.ok((await problemsOf(file, { env: { FLUIDCAP_TEST_UNSET_KEY: '' }, hosts: undefined })).some((l) => l.includes('apiKeyEnv')));
});

test.after(() => rmSync(dir, { recursive: true, force: true }));

test.run();
