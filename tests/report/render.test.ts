// report.md and report.html from a synthetic run directory: specific facts appear (capacity, SLO
// text as written, probe rows, baseline capacities, fit, cost with the price's source, method,
// provenance), text is escaped in both formats, and a run with only SPEC §4's fields still renders.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSyntheticRun } from './syntheticRun.ts';
import { writeReports } from '../../harness/report/write.ts';
import { loadRun } from '../../harness/report/loadRun.ts';
import { buildReport } from '../../harness/report/buildReport.ts';
import { renderMarkdown, escapeMarkdown } from '../../harness/report/markdown.ts';
import { renderHtml } from '../../harness/report/html.ts';
import { renderChart } from '../../harness/report/charts/render.ts';
import type { Block } from '../../harness/report/doc.ts';

const tmp = mkdtempSync(join(tmpdir(), 'fluidcap-report-'));
const full = writeSyntheticRun(join(tmp, 'full'), { interval: true });
await writeReports(full);
const md = readFileSync(join(full, 'report.md'), 'utf8');
const html = readFileSync(join(full, 'report.html'), 'utf8');

// The markdown row whose first cell is `first`, split into trimmed cells.
function mdRow(text: string, first: string): string[] {
  const line = text.split('\n').find((l) => l.startsWith(`| ${first} |`));
  assert.ok(line, `no table row starting with ${first}`);
  return line!.slice(2, -2).split(' | ').map((c) => c.trim());
}

test('capacity, its meaning, bracket and outcome', () => {
  assert.match(md, '**Capacity: 3 QPS**');
  assert.match(md, 'highest request rate');
  assert.match(md, 'Bracket: passed at 3 QPS, failed at 4 QPS; the gap is 33.3% of the passing rate, wider than the tolerance of 2.5%');
  assert.match(md, 'Outcome (max-probes): stopped after 3 probes (search.maxProbes).');
});

test('the Estimate paragraph says when the highest passing probe lies outside the interval, and is silent when it lies within', async () => {
  assert.match(md, '**Estimate: 3.4 QPS, 95% interval 2.6–3.9 QPS**');
  assert.not.match(md, 'That capacity lies');
  const below = writeSyntheticRun(join(tmp, 'pass-below'), { interval: true, capacityQps: 2, runId: 'pass-below' });
  await writeReports(below);
  assert.match(readFileSync(join(below, 'report.md'), 'utf8'), 'That capacity lies below the 95% interval: pooled, each at the rate its arrivals\' bursts put it at, the probes put the capacity higher (near the knee a probe\'s sample passes or fails by chance, and draws its own bursts).');
});

test('the method says which token arrivals were measured; a run from before says it did not record them', async () => {
  assert.match(md, 'Token arrivals: engine (search.probe.tokenArrivals): a token counts when the engine emitted it, with or without text; the running token count was asked for on every chunk.');
  const old = writeSyntheticRun(join(tmp, 'no-arrivals'), { minimal: true, runId: 'older-run' });
  await writeReports(old);
  assert.not.match(readFileSync(join(old, 'report.md'), 'utf8'), 'bursts is the rate', 'a run archived without bursts\' rates has no sentence about them');
  assert.match(readFileSync(join(old, 'report.md'), 'utf8'), 'Token arrivals: not recorded (a run from before engine arrivals: its chunks are those that carried text).');
});

test('the SLO is quoted as the user wrote it', () => {
  assert.match(md, '- **ttft**: `ttft: "p90 <= 2s"`');
  assert.match(md, '- **fluidity**: `fluidity: { tbtDeadline: 25ms, minFluidity: 0.9 }`');
});

test('probe rows carry verdict, decision, requests, SLO value and goodput; a second table the latencies and client error', () => {
  const header = mdRow(md, '#');
  assert.equal(header, ['#', 'rate (QPS)', 'realized (QPS)', 'bursts (QPS)', 'verdict', 'statistical decision', 'requests (evaluated / planned)', 'duration', 'SLO value (fluidity P99)', 'goodput (QPS)']);
  const row = mdRow(md, '1');
  const cell = (name: string) => row[header.indexOf(name)];
  // The arrival rate the probe's sample realized; a probe archived without one shows none.
  assert.is(cell('realized (QPS)'), '2.041');
  assert.is(mdRow(md, '3')[header.indexOf('realized (QPS)')], '—');
  // The rate its bursts put it at, where the estimate reads it; none for a probe archived without one.
  assert.is(cell('bursts (QPS)'), '2.138');
  assert.is(mdRow(md, '3')[header.indexOf('bursts (QPS)')], '—');
  // Under the table, what the three rates are and where the estimate reads each probe.
  assert.match(md, 'bursts is the rate at which an average draw of as many arrivals queues as much as this probe’s did (on a virtual server that the planned rate loads to 80%). The estimate reads each probe at its bursts’ rate, and token-gap SLOs at its realized rate');
  assert.is(cell('verdict'), 'pass');
  assert.is(cell('statistical decision'), 'pass 97%');
  assert.is(mdRow(md, '3')[header.indexOf('statistical decision')], '—');
  assert.is(cell('requests (evaluated / planned)'), '90 / 100');
  assert.is(cell('duration'), '50 s');
  assert.is(cell('SLO value (fluidity P99)'), '0.97');
  assert.is(cell('goodput (QPS)'), '1.8');
  // The latency table: the second table whose header starts with '#'.
  const lines = md.split('\n');
  const at = lines.findIndex((l, i) => l.startsWith('| # |') && i > lines.findIndex((m) => m.startsWith('| # |')));
  const latHeader = lines[at].slice(2, -2).split(' | ').map((c) => c.trim());
  assert.equal(latHeader, ['#', 'rate (QPS)', 'TTFT p50', 'TTFT p99', 'TBT p99', 'fluidity P99', 'fluidity P50', 'throughput (QPS)', 'client error']);
  const lat = lines[at + 2].slice(2, -2).split(' | ').map((c) => c.trim());
  assert.equal(lat, ['1', '2', '41 ms', '200 ms', '23.4 ms', '0.97', '0.999', '1.8', '0.7 ms']);
  const failed = mdRow(md, '2');
  // The verdict says it stopped early and points at the note below; the whole reason (with a pipe and a tag, escaped) is the note.
  assert.is(failed[header.indexOf('verdict')], 'fail (stopped early) \\[1\\]');
  assert.is(failed[header.indexOf('statistical decision')], 'undecided, leans fail 72%');
  // The bracket's fail end is a nearest-rank fail the evidence does not decide: the report says so.
  assert.match(md, "the fail at 4 QPS is undecided, leans fail 72%. A rate that is not decided could fall on the other side");
  assert.not.match(md, 'the pass at 3 QPS');
  assert.match(md, 'The decided probes alone bracket the capacity between a pass at 2 QPS (97.3%) and no decided fail: that is how finely this run knows it.');
  // The note names the SLO by its short name, as the console does, and stays short.
  const note = md.split('\n').find((l) => l.startsWith('- \\[1\\] probe 2'));
  assert.is(note, '- \\[1\\] probe 2 at 4 QPS: fluidity cannot pass (9 failing > 8 allowed)');
  // A probe stopped early has no SLO value (its summary counts the cancelled requests): the cell says so.
  assert.is(failed[header.indexOf('SLO value (fluidity P99)')], 'stopped early');
  assert.is(md.split('\n').find((l) => l.startsWith('| 2 |'))!.split(/(?<!\\)\|/).length - 2, header.length);
});

test('capacity under each baseline SLO, relative to the recipe SLO', () => {
  const fluid = mdRow(md, 'fluidity');
  assert.is(fluid[1], '`fluidity: { tbtDeadline: 25ms, minFluidity: 0.9 }`');
  assert.is(fluid[2], '3');
  assert.is(fluid[3], '0%');
  const ttftTbt = mdRow(md, 'ttft+tbt');
  assert.is(ttftTbt[1], '`ttft: "p90 <= 2s"; tbt p99 <= 25ms (default baseline)`');
  assert.is(ttftTbt[2], '2');
  assert.is(ttftTbt[3], '−33.3%');
  // Never measured (no prefill prediction): said so, not "below the lowest rate".
  assert.is(mdRow(md, 'schedulingDelay')[2], 'not measured: needs a predicted prefill time (profile/fit.json)');
});

test('fluid token rate, prefill fit, server metrics, host and GPU facts', () => {
  assert.match(md, '**47.6 tokens/s per request** at 3 QPS');
  assert.match(md, '21 ms');
  assert.equal(mdRow(md, 'b (s per token)'), ['b (s per token)', '2.500e-5']);
  assert.equal(mdRow(md, 'R²'), ['R²', '0.9987']);
  assert.equal(mdRow(md, 'points'), ['points', '9']);
  assert.match(md, 'Peaks over all probes: 21 requests running, 2 waiting, KV-cache usage 30%; 4 preemptions in total.');
  assert.equal(mdRow(md, 'image digest'), ['image digest', `vllm/vllm-openai@sha256:${'cd'.repeat(32)}`]);
  assert.equal(mdRow(md, '0'), ['0', 'NVIDIA H100 80GB HBM3', '81559', '550.54.15']);
  // GPU telemetry peak of probe 3: 70000 + 300 + 1 MiB of 81559.
  assert.match(md, '| 3 | 3 | 2 | 70301 / 81559 | 91% | 603 |');
});

test('cost with the price, its source and date from gpu-profiles/', () => {
  const price = mdRow(md, 'price per GPU-hour')[1];
  assert.match(price, /^\$6\.16 \(CoreWeave.*; 2025-05\)$/);
  assert.equal(mdRow(md, '$ per million output tokens'), ['$ per million output tokens', '$8.91']);
  assert.equal(mdRow(md, 'QPS per $/h'), ['QPS per $/h', '0.487']);
  assert.equal(mdRow(md, 'GPU-seconds of this run'), ['GPU-seconds of this run', '1234.5']);
  assert.equal(mdRow(md, 'cost of this run'), ['cost of this run', '$2.11']);
});

test('method and provenance: warm-up, percentile method, tool version, git sha, seed', () => {
  assert.match(md, 'Warm-up: the first 10% of each probe’s planned requests (10 requests) are sent but excluded');
  assert.match(md, 'exact over every evaluated request (nearest-rank)');
  assert.equal(mdRow(md, 'git sha'), ['git sha', '`0123456789abcdef0123456789abcdef01234567`']);
  assert.equal(mdRow(md, 'seed'), ['seed', '42']);
  assert.equal(mdRow(md, 'tool version'), ['tool version', '0.1.0']);
});

test('markdown escapes text that would become HTML or emphasis', () => {
  assert.match(md, 'a test run \\<script>alert(1)\\</script>');
  assert.is(escapeMarkdown('a*b*_[x](y)`z`<i>'), 'a\\*b\\*_\\[x\\](y)\\`z\\`\\<i>');
});

test('html: same facts, every text escaped, self-contained', () => {
  assert.match(html, '<strong>Capacity: 3 QPS</strong>');
  assert.match(html, '<code>ttft: &quot;p90 &lt;= 2s&quot;</code>');
  assert.match(html, 'a test run &lt;script&gt;alert(1)&lt;/script&gt;');
  assert.not.match(html, '<script');
  assert.match(html, 'probe 2 at 4 QPS: fluidity cannot pass (9 failing &gt; 8 allowed)');
  // Nothing is fetched: no external URL other than the SVG namespace, no img tags; links only to the CSVs and chart specs beside the page.
  const urls = html.match(/https?:\/\/[^"'\s<)]+/g) ?? [];
  assert.equal([...new Set(urls)], ['http://www.w3.org/2000/svg']);
  assert.not.match(html, /<(link|img|iframe|object)\b/);
  for (const href of html.match(/href="[^"]*"/g) ?? []) assert.match(href, /^href="report-[a-z0-9-]+\.(csv|vl\.json)"$/);
  // SLO value by rate, TTFT and TBT by rate, TBT CDF, TTFT by prompt length, fluidity by target
  // TBT, prefill fit, and running / waiting / KV usage over probe time.
  assert.is(html.match(/<svg /g)?.length, 12);
  assert.match(md, '*Chart in report.html: Isolated prefill time by prompt length.*');
  // Every table row of the markdown has a row in the HTML.
  const mdRows = md.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| #') ).length;
  assert.ok((html.match(/<tr>/g)?.length ?? 0) >= mdRows, 'html has fewer table rows than report.md');
});

test('SLO chart: one marker per probe by verdict, the early-stopped probe on its threshold (not at its value), threshold and capacity lines, the interval band', async () => {
  const blocks = buildReport(loadRun(full));
  const chart = blocks.find((b): b is Extract<Block, { kind: 'chart' }> => b.kind === 'chart' && b.chart.title === 'fluidity P99 by request rate')!.chart;
  assert.equal(chart.series.map((s) => [s.name, s.points, s.status]), [
    ['pass', [[2, 0.97], [3, 0.93]], ['measured', 'measured']],
    ['fail', [[4, 0.9]], ['early-stopped']],
  ]);
  assert.equal(chart.hLines.map((l) => l.y), [0.9]);
  assert.equal(chart.vLines.map((l) => l.x), [3]);
  assert.equal(chart.bands, [{ axis: 'x', from: 2.6, to: 3.9, label: '95% interval', color: '#8250df' }]);
  const { svg } = await renderChart({ ...chart, title: 'a <b> & "c"' }, { fluid: true });
  assert.match(svg, 'a &lt;b&gt; &amp; &quot;c&quot;');
  assert.is(svg.match(/aria-roledescription="point"/g)?.length, 3);
  assert.not.match(svg, /NaN|Infinity/);
});

test('prefill chart: measured points without the warm-up request, and the fitted curve', () => {
  const charts = buildReport(loadRun(full)).filter((b): b is Extract<Block, { kind: 'chart' }> => b.kind === 'chart');
  const prefill = charts.find((c) => c.chart.title === 'Isolated prefill time by prompt length')!.chart;
  const measured = prefill.series.find((s) => s.name === 'measured')!;
  assert.is(measured.points.length, 9);
  assert.ok(measured.points.every(([, y]) => y < 1), 'the 9 s warm-up prefill was plotted');
  const curve = prefill.series.find((s) => s.name === 'fitted D_p')!;
  const [x, y] = curve.points.at(-1)!;
  assert.is(x, 2048);
  assert.ok(Math.abs(y - (0.012 + 2.5e-5 * 2048 + 1.5e-9 * 2048 * 2048)) < 1e-12);
});

test('a price changed in gpu-profiles/ since the run is pointed out', () => {
  const dir = writeSyntheticRun(join(tmp, 'repriced'));
  const cap = JSON.parse(readFileSync(join(dir, 'capacity.json'), 'utf8'));
  cap.cost.usdPerHour = 8;
  writeFileSync(join(dir, 'capacity.json'), JSON.stringify(cap));
  const text = renderMarkdown(buildReport(loadRun(dir)));
  assert.match(text, 'The run was priced at $8.00 per GPU-hour; the GPU profile now says $6.16.');
  assert.not.match(md, 'The run was priced at');
});

test('a run with only SPEC §4 fields renders, stating what is absent', async () => {
  const dir = writeSyntheticRun(join(tmp, 'minimal'), { minimal: true, runId: 'old-run' });
  // One probe folder named the pipeline's way; capacity.json's rows carry no `dir` to point at it.
  mkdirSync(join(dir, 'probes', '01-qps-2'), { recursive: true });
  writeFileSync(join(dir, 'probes', '01-qps-2', 'summary.json'), JSON.stringify({ valid: true, planned: 100 }));
  await writeReports(dir);
  const text = readFileSync(join(dir, 'report.md'), 'utf8');
  assert.match(text, '# Capacity report: old-run');
  assert.match(text, '**Capacity: 3 QPS**');
  assert.match(text, 'profile/fit.json is absent');
  assert.match(text, 'This run recorded no baseline SLO verdicts.');
  assert.match(text, '- manifest.json (host facts, tool version and git sha unknown)');
  assert.not.match(text, /undefined|NaN|null/);
  // Probe summaries are found by the pipeline's directory naming even without `dir`.
  const header = mdRow(text, '#');
  assert.is(mdRow(text, '1')[header.indexOf('verdict')], 'pass');
  assert.is(mdRow(text, '1')[header.indexOf('requests (evaluated / planned)')], '90 / 100');
  assert.is(mdRow(text, '2')[header.indexOf('requests (evaluated / planned)')], '90');
});

test('an unmeasurable fluid rate is stated with its reason', async () => {
  const dir = writeSyntheticRun(join(tmp, 'nofluid'), { fluidTokensPerS: null });
  const text = renderMarkdown(buildReport(loadRun(dir)));
  assert.match(text, 'Not measurable at 3 QPS: no TBT deadline reaches it.');
  assert.ok((await renderHtml(buildReport(loadRun(dir)), 't')).includes('Not measurable at 3 QPS'));
});

test('a probe kept despite its client error says by how much the error could have moved its verdict', async () => {
  const dir = writeSyntheticRun(join(tmp, 'client-error'));
  const probe = readdirSync(join(dir, 'probes')).sort()[0];
  const file = join(dir, 'probes', probe, 'summary.json');
  const s = JSON.parse(readFileSync(file, 'utf8'));
  const note = 'client error 6.8 ms: the pass holds with every deadline 6.8 ms tighter';
  s.client = { ...s.client, clientErrorS: 0.0068, verdict: 'invalid', reason: 'client error 6.800 ms exceeds tolerance 2.000 ms: numbers from this probe are not trusted' };
  s.validity = `${s.client.reason}; ${note}, so it stands`;
  s.clientErrorEffect = { errorS: 0.0068, verdict: 'pass', moved: 'tightened', holds: true, failsHolding: [], passesHolding: ['fluidity', 'ttft'], note };
  writeFileSync(file, JSON.stringify(s));
  await writeReports(dir);
  const text = readFileSync(join(dir, 'report.md'), 'utf8');
  assert.match(text, `its client error exceeded the tolerance, and its verdict stands: ${note}.`);
  assert.not.match(text, `Probe ${s.index} at ${s.qps} QPS is invalid`);
  assert.match(readFileSync(join(dir, 'report.html'), 'utf8'), 'the pass holds with every deadline 6.8 ms tighter');
});

test.after(() => rmSync(tmp, { recursive: true, force: true }));
test.run();
