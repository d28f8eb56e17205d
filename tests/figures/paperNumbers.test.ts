// The data file of the papers' printed values and claims: every entry typed by its kind (value,
// ratio, ordering, setup) with its source row; a malformed entry is refused naming the file, the
// entry and the field; and the judge sets each beside ours: a ratio or ordering holds or not on our
// numbers, and an entry whose trace, hardware or system we did not run is "not comparable here"
// with the reason.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { judgeClaims, parsePaperNumbers, type Claim } from '../../harness/figures/paperNumbers.ts';
import { FIGURES } from '../../harness/figures/runFigure.ts';
import { UserError } from '../../harness/util/errors.ts';

const FILE = join(resolve(import.meta.dirname, '..', '..'), 'harness', 'figures', 'paperNumbers.json');
const raw = JSON.parse(readFileSync(FILE, 'utf8'));
const data = parsePaperNumbers(raw, FILE);
const CTX = { trace: 'arxiv-4k', onHosts: false };

test('every figure has entries; ratios and orderings compare two quantities; each names its source row', () => {
  for (const name of FIGURES) assert.ok(data.figures[name]?.claims.length, `${name} has no entries in paperNumbers.json`);
  const all = Object.values(data.figures).flatMap((f) => f.claims);
  const kinds = new Set(all.map((c) => c.kind));
  assert.equal([...kinds].sort(), ['ordering', 'ratio', 'setup', 'value']);
  // The printed ratios of the papers, by source row, and their values.
  const ratio = (id: string) => all.find((c) => c.kind === 'ratio' && c.source.id === id) as Extract<Claim, { kind: 'ratio' }>;
  assert.is(ratio('M-03').value, 1);
  assert.is(ratio('M-04').value, 2);
  assert.is(ratio('M-07').value, 1);
  assert.is(ratio('M-08').value, 3);
  assert.is(ratio('V-10').value, 1.85);
  assert.is(ratio('M-04').numerator, 'vllm.capacity.tbtP99');
  assert.is(ratio('M-04').denominator, 'sarathi.capacity.tbtP99');
  // The two printed fluidity capacities and the corrected ZeRO-Inference row.
  const value = (id: string) => all.find((c) => c.kind === 'value' && c.source.id === id) as Extract<Claim, { kind: 'value' }>;
  assert.is(value('M-01').value, 0.6);
  assert.is(value('M-02').value, 0.6);
  assert.is(value('Z-07').value, 24.05);
  assert.is(data.papers['zero-inference'].year, 2022);
  for (const c of all) assert.ok(data.papers[c.source.paper], `${c.source.id}: paper ${c.source.paper}`);
});

test('a malformed entry is refused naming the file, the entry and the field', () => {
  const noDenominator = structuredClone(raw);
  const i = noDenominator.figures['metron-fig6'].claims.findIndex((c: { kind: string }) => c.kind === 'ratio');
  delete noDenominator.figures['metron-fig6'].claims[i].denominator;
  assert.throws(
    () => parsePaperNumbers(noDenominator, 'x.json'),
    (e: Error) => e instanceof UserError && e.message.includes(`x.json: figures.metron-fig6.claims[${i}].denominator is required`),
  );
  const same = structuredClone(raw);
  same.figures['metron-fig6'].claims[i].denominator = same.figures['metron-fig6'].claims[i].numerator;
  assert.throws(() => parsePaperNumbers(same, 'x.json'), /claims\[\d+\]\.denominator must differ from numerator/);
  const negative = structuredClone(raw);
  negative.figures['metron-fig6'].claims[i].value = -2;
  assert.throws(() => parsePaperNumbers(negative, 'x.json'), /claims\[\d+\]\.value must be > 0/);
  const badKind = structuredClone(raw);
  badKind.figures['metron-fig3'].claims[0].kind = 'guess';
  assert.throws(() => parsePaperNumbers(badKind, 'x.json'), /x\.json: figures\.metron-fig3\.claims\[0\]/);
  const badId = structuredClone(raw);
  badId.figures['metron-fig3'].claims[0].source.id = 'fig3';
  assert.throws(() => parsePaperNumbers(badId, 'x.json'), /claims\[0\]\.source\.id must be a row id such as M-01/);
  const twice = structuredClone(raw);
  twice.figures['metron-fig3'].claims.push(twice.figures['metron-fig3'].claims[0]);
  assert.throws(() => parsePaperNumbers(twice, 'x.json'), /appears twice in the figure/);
});

const ratio = (over: Partial<Extract<Claim, { kind: 'ratio' }>> = {}): Claim => ({
  kind: 'ratio', key: 'r', source: { id: 'M-04', paper: 'metron', where: '§5.2', page: null }, setup: 's', quantity: 'q',
  numerator: 'a', denominator: 'b', value: 2, compare: 'about', tolerance: 0.25, approx: false, ...over,
});

test('a ratio holds when ours ÷ paper is within the band, and says by how much when not', () => {
  const [hold, miss, up, none] = judgeClaims(
    [ratio({ key: 'r1' }), ratio({ key: 'r2', value: 3 }), ratio({ key: 'r3', value: 3, compare: 'at-most' }), ratio({ key: 'r4', denominator: 'missing' })],
    { a: 4.4, b: 2 },
    CTX,
    data.papers,
  );
  assert.is(hold.verdict, 'holds');
  assert.is(hold.ours, 2.2);
  assert.match(hold.reason, /ours ÷ paper = 1\.1, within \[0\.8, 1\.25\]/);
  assert.is(miss.verdict, 'does not hold');
  assert.match(miss.reason, /= 0\.7333, not within/);
  assert.is(up.verdict, 'holds', 'up to 3×: 2.2 is within');
  assert.is(none.verdict, 'not comparable here');
  assert.match(none.reason, /not measured: missing has no value/);
  assert.is(hold.source, 'Agrawal et al. 2024, §5.2');
});

// A claim printed as a bound ("at least X", "up to X") is judged on one side only: ours far past
// the bound on its open side still holds, while the same numbers judged as "about X" do not.
test('a bound is judged one-sided: at-least holds far above and fails below; at-most holds far below and fails above', () => {
  const judge = (compare: 'about' | 'at-least' | 'at-most', a: number) => judgeClaims([ratio({ compare })], { a, b: 1 }, CTX, data.papers)[0];
  // Paper: 2 (tolerance 0.25, so the band is [1.6, 2.5]).
  assert.is(judge('at-least', 10).verdict, 'holds', 'at least 2: 10 is');
  assert.is(judge('about', 10).verdict, 'does not hold', 'about 2: 10 is not');
  assert.match(judge('at-least', 10).reason, /ours ÷ paper = 5, ≥ 0\.8$/);
  assert.is(judge('at-least', 1.2).verdict, 'does not hold', 'at least 2: 1.2 is not, even within the tolerance of 0.8× ');
  assert.match(judge('at-least', 1.2).reason, /= 0\.6, not ≥ 0\.8/);
  assert.is(judge('at-least', 1.7).verdict, 'holds', 'within the tolerance below the bound');
  assert.is(judge('at-most', 0.2).verdict, 'holds', 'up to 2: 0.2 is');
  assert.is(judge('about', 0.2).verdict, 'does not hold');
  assert.is(judge('at-most', 3).verdict, 'does not hold', 'up to 2: 3 is not (1.5× the bound)');
  assert.match(judge('at-most', 3).reason, /= 1\.5, not ≤ 1\.25/);
  // The paper's text of a bound says so.
  assert.match(judge('at-least', 10).paper, /= at least 2$/);
  assert.match(judge('at-most', 1).paper, /= up to 2$/);
  // Vidur's "up to 2×" (V-11) is typed as a bound in the data file.
  const v11 = Object.values(data.figures).flatMap((f) => f.claims).find((c) => c.source.id === 'V-11') as Extract<Claim, { kind: 'ratio' }>;
  assert.is(v11.compare, 'at-most');
});

test('orderings, and what is not comparable here: another trace, a public endpoint, a value only real hosts give', () => {
  const fig6 = data.figures['metron-fig6'].claims;
  const ours = { 'vllm.capacity.fluidity': 0.6, 'sarathi.capacity.fluidity': 0.6, 'vllm.missRateP50AtFluidCapacity': 0.02, 'sarathi.missRateP50AtFluidCapacity': 0 };
  const rows = judgeClaims(fig6, ours, CTX, data.papers);
  const by = (id: string) => rows.find((r) => r.id === id)!;
  assert.is(by('M-01').verdict, 'not comparable here');
  assert.is(by('M-01').reason, 'trace: the paper ran arxiv-summarization, this figure ran arxiv-4k');
  assert.is(by('M-01').ours, 0.6, 'ours is still shown');
  assert.is(by('M-03').verdict, 'holds');
  assert.is(by('M-06').verdict, 'holds');
  assert.match(by('M-06').reason, /0\.02 > 0/);
  assert.is(by('M-04').verdict, 'not comparable here');
  // On the paper's trace the absolute capacity is judged.
  const onTrace = judgeClaims(fig6, { ...ours, 'vllm.capacity.fluidity': 1.2 }, { trace: 'arxiv-summarization', onHosts: false }, data.papers);
  assert.is(onTrace.find((r) => r.id === 'M-01')!.verdict, 'does not hold');
  assert.is(onTrace.find((r) => r.id === 'M-02')!.verdict, 'holds');
  const endpoint = judgeClaims(data.figures['metron-fig5d'].claims, {}, CTX, data.papers).find((r) => r.kind === 'ordering')!;
  assert.is(endpoint.verdict, 'not comparable here');
  assert.match(endpoint.reason, /^public endpoint: /);
  const hostsOnly: Claim = { kind: 'value', key: 'v', source: { id: 'M-09', paper: 'metron', where: 'x', page: null }, setup: 's', quantity: 'q', value: 10, unit: 's', compare: 'about', tolerance: 0.25, approx: false, needs: { hosts: 'the paper\u2019s H100' } };
  const [h] = judgeClaims([hostsOnly], { v: 10 }, CTX, data.papers);
  assert.is(h.verdict, 'not comparable here');
  assert.match(h.reason, /^hardware: /);
  assert.is(judgeClaims([hostsOnly], { v: 10 }, { ...CTX, onHosts: true }, data.papers)[0].verdict, 'holds');
  const equal: Claim = { kind: 'ordering', key: 'o', source: { id: 'M-13', paper: 'metron', where: 'x', page: null }, setup: 's', quantity: 'q', left: 'l', relation: 'about-equal', right: 'r', tolerance: 0.25 };
  assert.is(judgeClaims([equal], { l: 0.011, r: 0.01 }, CTX, data.papers)[0].verdict, 'holds');
  assert.is(judgeClaims([equal], { l: 0.02, r: 0.01 }, CTX, data.papers)[0].verdict, 'does not hold');
});

test.run();
