// GPU profiles: every shipped profile validates; lookups by name and by nvidia-smi name; a broken
// profile is reported with its file, field and value.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, writeFileSync, rmSync, copyFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_GPU_PROFILES_DIR, findGpuProfileBySmiName, listGpuProfiles, loadAllGpuProfiles, loadGpuProfile } from '../../harness/catalog/gpus.ts';
import { UserError } from '../../harness/util/errors.ts';

test('the four required profiles exist and validate, each with a priced source and date', () => {
  const names = listGpuProfiles();
  for (const n of ['h100-sxm-80gb', 'a100-sxm-80gb', 'h200-sxm-141gb', 'l40s-48gb']) assert.ok(names.includes(n), n);
  for (const p of loadAllGpuProfiles()) {
    assert.ok(p.price && p.price.usdPerGpuHour > 0 && p.price.source.length > 10 && /^\d{4}-\d{2}/.test(p.price.date), `${p.name} price`);
    assert.ok(p.bf16Tflops > 100 && p.hbmTBps > 0.5 && p.memoryGiB > 40, `${p.name} figures`);
  }
  assert.is(loadGpuProfile('h100-sxm-80gb').nvidiaSmiName, 'NVIDIA H100 80GB HBM3');
});

test('findGpuProfileBySmiName matches what nvidia-smi prints (spacing and case ignored)', () => {
  assert.is(findGpuProfileBySmiName('NVIDIA H100 80GB HBM3')?.name, 'h100-sxm-80gb');
  assert.is(findGpuProfileBySmiName('  nvidia a100-sxm4-80gb ')?.name, 'a100-sxm-80gb');
  assert.is(findGpuProfileBySmiName('NVIDIA L40S')?.name, 'l40s-48gb');
  assert.is(findGpuProfileBySmiName('NVIDIA GeForce RTX 4090'), null);
});

test('unknown profile: UserError listing the known ones', () => {
  try {
    loadGpuProfile('x100');
    assert.unreachable();
  } catch (err) {
    assert.instance(err, UserError);
    assert.match((err as Error).message, /unknown GPU profile "x100" \(string\); known: a100-sxm-80gb, h100-sxm-80gb/);
  }
});

test('a broken profile names the file, the field and the value with its type', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gpu-profiles-'));
  try {
    copyFileSync(join(DEFAULT_GPU_PROFILES_DIR, 'h100-sxm-80gb.yaml'), join(dir, 'h100-sxm-80gb.yaml'));
    writeFileSync(
      join(dir, 'bad.yaml'),
      'name: bad\nnvidiaSmiName: X\nmemoryGiB: "eighty"\nhbmTBps: 1\nbf16Tflops: 1\nnvlinkGBps: 0\n' +
        'efficiency: { compute: 1.5, memory: 0.5, attention: 0.5, allReduce: 0.5, allReduceLatencyUs: 1, iterationOverheadMs: 1 }\n',
    );
    assert.is(loadGpuProfile('h100-sxm-80gb', dir).name, 'h100-sxm-80gb');
    try {
      loadGpuProfile('bad', dir);
      assert.unreachable();
    } catch (err) {
      const msg = (err as Error).message;
      assert.instance(err, UserError);
      assert.match(msg, /bad\.yaml: memoryGiB .*got "eighty" \(string\)/);
      assert.match(msg, /bad\.yaml: efficiency\.compute .*got 1\.5 \(number\)/);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
