// The claims file and the --check table: claims.csv holds every entry with its verdict (quoted
// where the text holds commas), the table lists every judged entry of every figure once and
// leaves the setup facts to the READMEs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { checkTable, claimsCsv, claimsMarkdown, verdictCounts } from '../../harness/figures/claimsTable.ts';
import { judgeClaims, parsePaperNumbers } from '../../harness/figures/paperNumbers.ts';

const FILE = join(resolve(import.meta.dirname, '..', '..'), 'harness', 'figures', 'paperNumbers.json');
const data = parsePaperNumbers(JSON.parse(readFileSync(FILE, 'utf8')), FILE);
const ctx = { trace: 'arxiv-4k', onHosts: false };
const fig6 = judgeClaims(data.figures['metron-fig6'].claims, { 'vllm.capacity.fluidity': 2.4, 'sarathi.capacity.fluidity': 1.2, tbtDeadlineMs: 25 }, ctx, data.papers);
const fig5d = judgeClaims(data.figures['metron-fig5d'].claims, {}, ctx, data.papers);

test('claims.csv: one row per entry, in the data file\u2019s order, with its verdict', () => {
  const lines = claimsCsv(fig6).trimEnd().split('\n');
  assert.is(lines[0], 'id,kind,key,quantity,paper,source,ours,oursText,verdict,reason');
  assert.is(lines.length, 1 + data.figures['metron-fig6'].claims.length);
  assert.match(lines.find((l) => l.startsWith('M-03,'))!, /,2,2 \(2\.4 ÷ 1\.2\),does not hold,"ours ÷ paper = 2, not within \[0\.8, 1\.25\]"$/);
  assert.match(lines.find((l) => l.startsWith('M-S3,'))!, /,setup,same as the paper$/);
  assert.is(verdictCounts(fig6), '0 hold, 1 do not hold, 6 not comparable here');
});

test('the --check table: every judged entry of every figure once, setup facts left to the READMEs', () => {
  const table = checkTable([{ figure: 'metron-fig6', rows: fig6 }, { figure: 'metron-fig5d', rows: fig5d }]).trimEnd().split('\n');
  const judged = [...fig6, ...fig5d].filter((r) => r.kind !== 'setup');
  assert.is(table.length, 1 + judged.length);
  assert.match(table[0], /^figure\s+row\s+kind\s+paper\s+ours\s+verdict\s+why$/);
  assert.ok(table.some((l) => /^metron-fig5d\s+M-23\s+ordering\s.*not comparable here\s+public endpoint: /.test(l)));
  assert.not.ok(table.some((l) => /\bM-S\d/.test(l)), 'no setup rows');
  assert.match(claimsMarkdown(fig5d), /The paper’s setup beside ours/);
});

test.run();
