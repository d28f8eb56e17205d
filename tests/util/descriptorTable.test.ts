// descriptorTable.ts: the process's descriptor table is grown once, before timing, and nothing is
// left open. Linux only (FDSize in /proc/self/status); elsewhere the calls must simply not throw.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { descriptorTableSize, MAX_RESERVED_DESCRIPTORS, openDescriptorCount, reserveDescriptors } from '../../harness/util/descriptorTable.ts';

const linux = descriptorTableSize() !== null;
if (!linux) console.log('# descriptorTable: no /proc/self/status FDSize here; only checking that the calls do not throw');

test('the table grows to hold the reserved descriptors, and none stay open', () => {
  if (!linux) return void reserveDescriptors(10);
  const before = descriptorTableSize()!;
  const open = openDescriptorCount()!;
  // Enough to need a bigger table than the one we have.
  const want = before + 100 - open;
  assert.is(reserveDescriptors(want), want);
  assert.ok(descriptorTableSize()! >= open + want, `FDSize ${descriptorTableSize()} < ${open + want}`);
  assert.ok(descriptorTableSize()! > before, `FDSize stayed ${before}`);
  assert.is(openDescriptorCount(), open);
});

test('room already there is not made again', () => {
  if (!linux) return;
  const size = descriptorTableSize()!;
  const open = openDescriptorCount()!;
  assert.is(reserveDescriptors(size - open - 8), size - open - 8);
  assert.is(descriptorTableSize(), size);
  assert.is(openDescriptorCount(), open);
});

test('a reservation is capped', () => {
  if (!linux) return;
  const made = reserveDescriptors(MAX_RESERVED_DESCRIPTORS * 4);
  assert.ok(made <= MAX_RESERVED_DESCRIPTORS, String(made));
  assert.ok(made > 0);
});

test.run();
