// The scheduler a recipe asks for, mapped to the vLLM version that runs it: V0 pinned where V1 is
// the default (0.8 to 0.10), refused where V0 no longer exists (0.11 on), request logging off where
// it is on by default; and a spec written for one version rewritten for the version the image has.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseVersion, versionFromTag, vllmVersionedParts, vllmTraits } from '../../harness/provision/engineVersion.ts';
import { forVersion, renderContainerSpec } from '../../harness/provision/containerSpec.ts';
import { targetSchema } from '../../harness/provision/targetSpec.ts';
import { UserError } from '../../harness/util/errors.ts';

const ctx = (version: string | null, userEnv: Record<string, string> = {}) => ({ image: 'vllm/vllm-openai:vX', version, source: 'tag' as const, userEnv });

test('versions from tags and from what engines print', () => {
  assert.is(versionFromTag('vllm/vllm-openai:v0.8.5'), '0.8.5');
  assert.is(versionFromTag('registry:5000/vllm/vllm-openai:0.10.1.post1'), '0.10.1');
  assert.is(versionFromTag('registry:5000/vllm/vllm-openai'), null, 'a registry port is not a tag');
  assert.is(versionFromTag('vllm/vllm-openai:latest'), null);
  assert.is(versionFromTag('vllm/vllm-openai@sha256:' + 'ab'.repeat(32)), null);
  assert.equal(parseVersion('0.10.1rc2.dev310+g4f35be10a'), { major: 0, minor: 10, patch: 1 });
  assert.is(parseVersion('version: 1 (abc)'), null);
});

test('0.8.5, prefill-first: VLLM_USE_V1=0 (V1 would chunk every prefill) and request logging off', () => {
  assert.equal(vllmVersionedParts('prefill-first', ctx('0.8.5')), { argv: ['--disable-log-requests'], env: { VLLM_USE_V1: '0' } });
  assert.equal(vllmVersionedParts('prefill-first', ctx('0.8.5', { VLLM_USE_V1: '0' })), { argv: ['--disable-log-requests'], env: {} }, "the recipe's own pin is kept");
  assert.throws(() => vllmVersionedParts('prefill-first', ctx('0.8.5', { VLLM_USE_V1: '1' })), (e: Error) =>
    e instanceof UserError && /target\.env\.VLLM_USE_V1 must be "0".*got "1"/.test(e.message));
});

test('before 0.8 V0 is the default: nothing to pin; 0.10.2 on logs no requests by default', () => {
  assert.equal(vllmVersionedParts('prefill-first', ctx('0.7.3')), { argv: ['--disable-log-requests'], env: {} });
  assert.equal(vllmVersionedParts('prefill-first', ctx('0.10.2')), { argv: [], env: { VLLM_USE_V1: '0' } });
  assert.is(vllmTraits('0.10.2')!.hasV0, true);
});

test('newest: prefill-first refused naming the closest policy; chunked prefill runs; VLLM_USE_V1 refused as unknown', () => {
  assert.throws(() => vllmVersionedParts('prefill-first', { ...ctx('0.26.0'), where: 'r.yaml: ' }), (e: Error) =>
    e instanceof UserError && /^r\.yaml: target\.engine vllm asks for vLLM's prefill-first scheduler/.test(e.message) &&
    /vLLM 0\.26\.0 \(from the image tag\), image vllm\/vllm-openai:vX no longer has/.test(e.message) && /closest policy it has is chunked prefill: engine: sarathi/.test(e.message));
  assert.equal(vllmVersionedParts('chunked-prefill', ctx('0.26.0')), { argv: [], env: {} });
  assert.throws(() => vllmVersionedParts('chunked-prefill', ctx('0.26.0', { VLLM_USE_V1: '0' })), (e: Error) =>
    e instanceof UserError && /target\.env\.VLLM_USE_V1 does not exist in vLLM 0\.26\.0/.test(e.message));
});

test('unknown version (no tag): nothing added; the spec is rewritten once the image tells its version', () => {
  const target = targetSchema.parse({ engine: 'vllm', image: 'vllm/vllm-openai:latest', model: 'meta-llama/Meta-Llama-3-8B', engineArgs: { extraArgs: ['--seed', '1'] } });
  const spec = renderContainerSpec(target, { runId: 'r' })!;
  assert.is(spec.basis.versionSource, 'unknown');
  assert.not.ok(spec.argv.includes('--disable-log-requests'));
  assert.is(spec.env.VLLM_USE_V1, undefined);
  const v085 = forVersion(spec, { version: '0.8.5', source: 'image' });
  assert.is(v085.env.VLLM_USE_V1, '0');
  assert.equal(v085.argv.slice(-3), ['--disable-log-requests', '--seed', '1'], "fluidcap's switches before the recipe's extraArgs");
  assert.equal(v085.basis, { family: 'vllm', scheduler: 'prefill-first', version: '0.8.5', versionSource: 'image', versionArgv: ['--disable-log-requests'], versionEnv: ['VLLM_USE_V1'] });
  // Written for 0.8.5, then the image turns out to be 0.10.2 whose --help has no such switch: both go.
  const v0102 = forVersion(v085, { version: '0.10.2', source: 'image', hasDisableLogRequests: false });
  assert.not.ok(v0102.argv.includes('--disable-log-requests'));
  assert.is(v0102.env.VLLM_USE_V1, '0');
  assert.throws(() => forVersion(v085, { version: '0.12.0', source: 'image' }), /no longer has/);
});

test.run();
