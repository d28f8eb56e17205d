// The data file of the papers' numbers: every number names its figure, a printed one also its page
// and value, an absent one says why; and the checker refuses a printed number without a page.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { compareWithPaper, parsePaperNumbers } from '../../harness/figures/paperNumbers.ts';
import { FIGURES } from '../../harness/figures/runFigure.ts';

const FILE = join(resolve(import.meta.dirname, '..', '..'), 'harness', 'figures', 'paperNumbers.json');
const raw = JSON.parse(readFileSync(FILE, 'utf8'));

test('every paper number has its figure, and a page when printed; an absent one says why', () => {
  const data = parsePaperNumbers(raw, FILE);
  for (const name of FIGURES) assert.ok(data.figures[name], `${name} has no entry in paperNumbers.json`);
  let count = 0;
  for (const [name, fig] of Object.entries(data.figures)) {
    assert.ok(data.papers[fig.paper], `${name} names an unknown paper`);
    for (const n of fig.numbers) {
      count += 1;
      // A number printed in the text rather than a figure (e.g. the abstract) names that part.
      assert.match(n.figure, /^(Fig\. \d+[a-z]?|Abstract)$/, `${name}.${n.key}: figure`);
      if (n.status === 'printed') {
        assert.type(n.value, 'number', `${name}.${n.key}: value`);
        assert.type(n.page, 'number', `${name}.${n.key}: page`);
      } else {
        assert.is(n.value, null, `${name}.${n.key}: a number not printed has no value`);
        assert.ok((n.note ?? '').length > 10, `${name}.${n.key}: says why it is absent`);
      }
    }
  }
  assert.ok(count >= 10, `only ${count} numbers`);
});

test('the checker names the file and field of a printed number without a page', () => {
  const bad = structuredClone(raw);
  Object.assign(bad.figures['metron-fig5d'].numbers[0], { status: 'printed', value: 0.1, page: null });
  assert.throws(() => parsePaperNumbers(bad, 'x.json'), (e: Error) => /x\.json: figures\.metron-fig5d\.numbers\[0\]/.test(e.message) && /page/.test(e.message));
  const unnoted = structuredClone(raw);
  delete unnoted.figures['metron-fig3'].numbers[1].note;
  assert.throws(() => parsePaperNumbers(unnoted, 'x.json'), /must say why/);
});

test('the comparison divides ours by the paper only where the paper printed a number', () => {
  const data = parsePaperNumbers(raw, FILE);
  const printed = { ...data.figures['metron-fig5d'].numbers[0], status: 'printed' as const, value: 0.04, page: 9 };
  const rows = compareWithPaper([printed, data.figures['metron-fig5d'].numbers[1]], { 'vllm.missRateAt25ms': 0.01, 'sarathi.missRateAt25ms': 0.002 }, 'Agrawal et al. 2024');
  assert.is(rows[0].ratio, 0.25);
  assert.is(rows[0].paperSource, 'Agrawal et al. 2024 Fig. 5d, p. 9');
  assert.is(rows[1].paper, null);
  assert.is(rows[1].ratio, null);
  assert.is(rows[1].ours, 0.002);
  assert.match(rows[1].note, /not found/);
});

test.run();
