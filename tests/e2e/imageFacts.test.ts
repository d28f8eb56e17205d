// End-to-end: an engine image known before it serves. The simulated engine's image (over real sshd
// + dockerd) and llama.cpp's server image (local Docker) are asked their version and `--help` in
// throwaway containers, the answer is cached per image id, and a launch whose argv names a flag
// the image's help does not list is refused, naming the flag, the image and its version, before
// any engine container starts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { e2eEnv, e2eHost, freePort } from './e2eEnv.ts';
import { llamaEnv } from './llamacppSupport.ts';
import { targetSchema } from '../../harness/provision/targetSpec.ts';
import { renderContainerSpec } from '../../harness/provision/containerSpec.ts';
import { launchEngine } from '../../harness/provision/launcher.ts';
import { LOCAL_HOST } from '../../harness/provision/inventory.ts';
import { localDocker, dockerFor } from '../../harness/provision/dockerAgent.ts';
import { connectHost } from '../../harness/provision/sshConnection.ts';
import { learnImage, imageFlagProblem } from '../../harness/provision/imageFacts.ts';
import { listRunContainers } from '../../harness/provision/teardown.ts';
import { UserError } from '../../harness/util/errors.ts';

const env = e2eEnv('image facts');
const llama = env ? llamaEnv('image facts (llama.cpp)') : null;
const packageVersion = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;

if (env) {
  const dir = mkdtempSync(join(tmpdir(), 'fluidcap-e2e-image-'));
  // One cache for the file: the first test reads the image (two throwaway runs), the launches reuse it.
  const cacheDir = join(dir, 'cache');

  test('sim image over SSH: version and --help read once, cached by image id, the second look runs nothing', async () => {
    const conn = await connectHost(e2eHost(env));
    try {
      const docker = dockerFor(conn);
      const imageId = (await docker.getImage(env.image).inspect()).Id;
      const runId = `e2e-${process.pid}-facts`;
      const facts = await learnImage(docker, { image: env.image, imageId, family: 'sim', runId, cacheDir, hostName: 'e2e' });
      assert.is(facts.version, packageVersion, '`fluidcap sim serve --version` in the image');
      for (const f of ['--model', '--max-num-seqs', '--max-num-batched-tokens', '--chunk-size', '--tensor-parallel-size', '--fault-seed']) assert.ok(facts.flags.includes(f), f);
      assert.equal(readdirSync(cacheDir), [`sim-${imageId.replace('sha256:', '')}.json`]);
      assert.equal(await listRunContainers(docker, runId), [], 'the throwaway containers are removed');
      const refuses = { createContainer: () => { throw new Error('must not run a container'); } } as unknown as Docker;
      assert.equal(await learnImage(refuses, { image: env.image, imageId, family: 'sim', runId, cacheDir, hostName: 'e2e' }), facts);
    } finally {
      await conn.close();
    }
  });

  test('sim image: a flag its --help lacks is refused before the engine starts, naming flag, image and version', async () => {
    const runId = `e2e-${process.pid}-badflag`;
    const target = targetSchema.parse({ engine: 'sim', image: env.image, model: 'tiny', port: await freePort(), sim: { timeScale: 0.1 }, readyTimeout: '60s', engineArgs: { extraArgs: ['--enable-chunked-prefill'] } });
    const spec = renderContainerSpec(target, { runId })!;
    const err = await launchEngine(spec, e2eHost(env), { runDir: join(dir, 'bad'), imageCacheDir: cacheDir }).then(async (engine) => (await engine.stop(), null), (e: Error) => e);
    assert.ok(err instanceof UserError, String(err));
    assert.match(err.message, new RegExp(`^image ${env.image} \\(sim ${packageVersion.replace(/\./g, '\\.')}\\) does not know the flag --enable-chunked-prefill: its own --help does not list it`));
    assert.equal(await listRunContainers(localDocker(), runId), [], 'no engine container was created');
  });

  test('sim image: a launch whose flags are all in --help records the version it read', async () => {
    const runId = `e2e-${process.pid}-okflags`;
    const target = targetSchema.parse({ engine: 'sim', image: env.image, model: 'tiny', port: await freePort(), sim: { timeScale: 0.1 }, readyTimeout: '60s' });
    const engine = await launchEngine(renderContainerSpec(target, { runId })!, LOCAL_HOST, { runDir: join(dir, 'ok'), imageCacheDir: cacheDir });
    try {
      assert.equal(engine.facts.engineImage?.version, packageVersion);
      assert.ok((engine.facts.engineImage?.helpFlags ?? 0) > 20);
      assert.equal(engine.facts.engineRuntime, { generation: 'V0', engineVersion: 'fluidcap-sim-0.1.0', versionRoute: 'fluidcap-sim-0.1.0', chunkedPrefill: false, maxNumBatchedTokens: 4096 },
        'read back from the container\'s start-up log and /version');
    } finally {
      await engine.stop();
    }
  });

  test('an engine that starts another scheduler than the recipe asked for is refused and removed', async () => {
    const runId = `e2e-${process.pid}-mismatch`;
    const target = targetSchema.parse({ engine: 'sim', image: env.image, model: 'tiny', port: await freePort(), sim: { timeScale: 0.1, scheduler: 'vllm' }, readyTimeout: '60s' });
    const spec = renderContainerSpec(target, { runId })!;
    // Asked for chunked prefill, started without it: what a vLLM 0.8.5 V0 launch of engine sarathi would be if its flag were lost.
    const asked = { ...spec, basis: { ...spec.basis, scheduler: 'chunked-prefill' as const } };
    const err = await launchEngine(asked, LOCAL_HOST, { runDir: join(dir, 'mismatch'), imageCacheDir: cacheDir }).then(async (engine) => (await engine.stop(), null), (e: Error) => e);
    assert.ok(err instanceof UserError, String(err));
    assert.match(err.message, /the recipe asks for chunked prefill, but the engine started V0 without it .*Nothing was measured\.$/);
    assert.equal(await listRunContainers(localDocker(), runId), [], 'the engine is removed');
  });
}

if (env && llama) {
  test("llama.cpp's image: --version and --help read; fluidcap's llama-server argv is all known; a foreign flag is named", async () => {
    const docker = localDocker();
    const imageId = (await docker.getImage(llama.image).inspect()).Id;
    const facts = await learnImage(docker, { image: llama.image, imageId, family: 'llamacpp', runId: `e2e-${process.pid}-llama`, cacheDir: mkdtempSync(join(tmpdir(), 'fluidcap-e2e-llama-')), hostName: 'local' });
    assert.ok(facts.version !== null && facts.version.length > 0, String(facts.version));
    for (const f of ['--parallel', '-np', '--ctx-size', '--no-cache-prompt', '--cache-ram', '--metrics', '--alias']) assert.ok(facts.flags.includes(f), f);
    const target = targetSchema.parse({ engine: 'llamacpp', image: llama.image, model: 'stories260K', llamacpp: { modelFile: llama.model }, engineArgs: { threads: 1, extraArgs: ['--max-num-seqs', '4'] } });
    const spec = renderContainerSpec(target, { runId: 'x' })!;
    const problem = imageFlagProblem(spec, facts);
    assert.ok(problem);
    assert.match(problem.message, new RegExp(`image ${llama.image} \\(llamacpp .+\\) does not know the flag --max-num-seqs:`));
    assert.is(imageFlagProblem({ ...spec, argv: spec.argv.slice(0, -2) }, facts), null, "fluidcap's own llama-server flags are all in its --help");
  });
}

test.run();
