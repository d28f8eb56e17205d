// The chart style's specs (report/charts/spec.ts) and what the report asks of it: early-stopped
// probes marked and never drawn at their cancelled value, the TBT tail on log axes, TTFT by prompt
// length binned in panels, the engine's gauges as small multiples, the capacity interval drawn, a
// log y axis that still shows zeros, and a renderer that can load nothing. Pure spec checks, plus a
// few renders (Vega headless, no browser).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSyntheticRun } from './syntheticRun.ts';
import { loadRun } from '../../harness/report/loadRun.ts';
import { buildReport, capacityIntervalChart } from '../../harness/report/buildReport.ts';
import { chartRows, chartSpec } from '../../harness/report/charts/spec.ts';
import { chartCaption, renderChart, specToSvg } from '../../harness/report/charts/render.ts';
import type { Block, Chart } from '../../harness/report/doc.ts';
import { svgPoints } from '../support/svgMarks.ts';

const tmp = mkdtempSync(join(tmpdir(), 'fluidcap-charts-'));
const data = loadRun(writeSyntheticRun(join(tmp, 'run'), { interval: true }));
const charts = buildReport(data).filter((b): b is Extract<Block, { kind: 'chart' }> => b.kind === 'chart').map((b) => b.chart);
const chart = (title: string): Chart => {
  const c = charts.find((x) => x.title.startsWith(title));
  assert.ok(c, `no chart ${title}: ${charts.map((x) => x.title).join(', ')}`);
  return c!;
};
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const layers = (spec: Json): Json[] => (spec.layer ?? spec.spec.layer) as Json[];
const layer = (spec: Json, name: string) => layers(spec).find((l) => l.name === name);

test('SLO by rate: the early-stopped probe sits on the threshold as a hollow triangle, not at its cancelled value', () => {
  const c = chart('fluidity P99 by request rate');
  const stopped = chartRows(c).filter((r) => r.layer === 'point' && r.series === 'fail');
  assert.equal(stopped.map((r) => [r.x, r.y, r.hollow]), [[4, 0.9, true]]);
  assert.ok(stopped.every((r) => r.y !== 0 && r.y !== 0.61), 'drawn at its value');
  const spec = chartSpec(c) as Json;
  assert.equal(layer(spec, 'points_hollow')!.mark.filled, false);
  assert.equal(layer(spec, 'points')!.encoding.shape.scale.range.includes('triangle-down'), true);
  // The interval band and its label are drawn; the caption says how to read the marks.
  assert.ok(layer(spec, 'band_0'), 'no interval band');
  assert.match(chartCaption(c), 'A hollow triangle is a probe stopped early');
});

test('TBT by rate: early-stopped probes are marked and left out of the line; the caption says why TBT p99 can exceed the deadline below capacity', () => {
  const c = chart('TBT by request rate');
  const rows = chartRows(c);
  assert.equal(rows.filter((r) => r.layer === 'line' && r.x === 4), [], 'the line runs through the early-stopped probe');
  assert.equal(rows.filter((r) => r.layer === 'point' && r.x === 4).map((r) => r.hollow), [true, true]);
  assert.match(chartCaption(c), 'carries slack forward');
});

test('TBT distribution: a tail on log–log axes', () => {
  const spec = chartSpec(chart('TBT distribution')) as Json;
  const line = layer(spec, 'line')!;
  assert.is(line.encoding.x.scale.type, 'log');
  assert.is(line.encoding.y.scale.type, 'log');
});

test('TTFT by prompt length: binned counts in one panel per probe, the prefill curves in every panel', () => {
  const c = chart('TTFT by prompt length');
  const spec = chartSpec(c) as Json;
  assert.is(spec.facet.field, 'panel');
  const density = layer(spec, 'density')!;
  assert.ok(density.encoding.x.bin && density.encoding.y.bin, 'not binned');
  assert.is(density.encoding.opacity.aggregate, 'count');
  assert.is(layer(spec, 'points'), undefined);
  const curves = chartRows(c).filter((r) => r.layer === 'line' && r.series === 'D_p(P) isolated');
  assert.equal([...new Set(curves.map((r) => r.panel))], c.panels!.names);
});

test('server metrics: small multiples, one panel per probe, instead of a line per probe in one chart', () => {
  const spec = chartSpec(chart('Requests running and waiting')) as Json;
  assert.is(spec.facet.field, 'panel');
  assert.equal(spec.facet.sort, ['2 QPS (#1)', '3 QPS (#3)', '4 QPS (#2)']);
  assert.equal(spec.spec.layer.find((l: Json) => l.name === 'line').encoding.color.scale.domain, ['running', 'waiting']);
});

test('the capacity interval drawn: interval with its estimate, decided bracket, bracket and probes on one rate axis', () => {
  const c = capacityIntervalChart(data)!;
  assert.equal(c.yCategories, ['95% interval', 'decided bracket', 'bracket', 'probes']);
  const ranges = chartRows(c).filter((r) => r.layer === 'range').map((r) => [r.y, r.x, r.x2]);
  // The decided bracket has no decided fail: drawn to the highest probed rate.
  assert.equal(ranges, [['95% interval', 2.6, 3.9], ['decided bracket', 2, 4], ['bracket', 3, 4]]);
  assert.equal(chartRows(c).filter((r) => r.series === 'estimate').map((r) => r.x), [3.4]);
});

test('capacity under each SLO definition is drawn, not only tabled', () => {
  const c = chart('Capacity under each SLO definition');
  assert.equal(c.yCategories, ['recipe SLO', 'fluidity', 'ttft+tbt', 'schedulingDelay']);
  assert.equal(chartRows(c).filter((r) => r.layer === 'range').map((r) => [r.y, r.x2]), [['recipe SLO', 3], ['fluidity', 3], ['ttft+tbt', 2]]);
  assert.equal(chartRows(c).filter((r) => r.layer === 'label' && r.y === 'schedulingDelay').map((r) => r.text), ['not measured']);
});

test('the search path counts probes: its x axis has ticks at whole probe numbers only', async () => {
  const c = chart('The search, probe by probe');
  const x = layer(chartSpec(c) as Json, 'line')!.encoding.x as Json;
  assert.equal([x.axis.format, x.axis.tickMinStep], ['d', 1]);
  // Drawn, the probe axis (three probes) labels 1, 2 and 3 and nothing between them.
  const svg = (await renderChart(c, { fluid: false })).svg;
  const axis = svg.slice(svg.indexOf("X-axis titled 'probe"), svg.indexOf("Y-axis titled"));
  const labels = [...axis.matchAll(/>([\d.]+)<\/text>/g)].map((m) => m[1]);
  assert.equal(labels, ['1', '2', '3']);
});

test('a log y axis draws zeros on its floor as their own mark, and the caption says so', async () => {
  const c: Chart = { title: 'miss', xLabel: 'x', yLabel: 'y', xScale: 'log', yScale: 'log', hLines: [], vLines: [], description: 'd', series: [{ name: 'a', kind: 'line', dots: true, color: '#000', points: [[1, 0.001], [2, 0]] }] };
  const zero = chartRows(c).find((r) => r.x === 2)!;
  assert.equal([zero.y, zero.status], [0.001 / 3, '0 (drawn on the log axis floor)']);
  assert.match(chartCaption(c), 'values of 0');
  const { svg } = await renderChart(c, { fluid: true });
  assert.is(svgPoints(svg, 'a').length, 2);
  assert.match(svg, /Y-axis titled 'y' for a log scale/);
});

test('a chart can load nothing: a spec that names a URL or a file fails instead of fetching', async () => {
  for (const url of ['https://example.invalid/data.json', 'file:///etc/passwd', '/etc/passwd']) {
    const spec = { $schema: 'https://vega.github.io/schema/vega-lite/v6.json', data: { url }, mark: 'point', encoding: { x: { field: 'a', type: 'quantitative' } } };
    let svg = '';
    let error: unknown = null;
    try {
      svg = await specToSvg(spec);
    } catch (e) {
      error = e;
    }
    // Vega reports a failed load as a warning and draws no data; either way nothing was read.
    assert.ok(error !== null || !svg.includes('aria-roledescription="point"'), url);
    assert.not.match(svg, 'root:');
  }
});

test('a standalone chart file: XML declaration, fixed size, white background, no stylesheet needed', async () => {
  const { svg } = await renderChart(chart('TTFT by request rate'), { fluid: false });
  assert.match(svg, /^<\?xml version="1.0" encoding="UTF-8"\?>\n<svg [^>]*width="\d+" height="\d+"/);
  assert.match(svg, /<rect width="\d+" height="\d+" fill="#ffffff"\/>/);
  assert.not.match(svg, /<style|class="(grid|frame|tick|axis|series)"/);
});

test.after(() => rmSync(tmp, { recursive: true, force: true }));
test.run();
