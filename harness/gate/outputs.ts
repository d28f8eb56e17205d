// The gate's decisions as the files a nightly job hands on: a markdown summary for people, JUnit
// XML for CI (one test case per configuration: a regression is a failure, a refused run an error,
// an undecided one a failure too, with what would settle it: never skipped, since a gate that
// cannot tell has not passed), and a Prometheus textfile for the node exporter's textfile
// collector (capacity, interval, QPS per $/hour and the verdict, labelled by configuration and
// run). Pure: decisions in, text out.
import type { ConfigDecision, GateResult, GateVerdict } from './decide.ts';

const pct = (x: number | null) => (x === null || !Number.isFinite(x) ? '—' : `${+(x * 100).toPrecision(3)}%`);
const qps = (x: number | null) => (x === null ? '—' : Number.isFinite(x) ? `${+x.toPrecision(4)}` : '∞');
const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

const HEADLINE: Record<GateVerdict, string> = {
  pass: 'pass',
  regression: 'REGRESSION',
  inconclusive: 'UNDECIDED',
  refused: 'refused',
  new: 'new',
};

/** The markdown summary: counts, one row per configuration, and each decision's reason. */
export function gateMarkdown(r: GateResult): string {
  const c = r.counts;
  const o = r.options;
  const lines = [
    '# Capacity gate',
    '',
    `${r.decisions.length} configuration(s): ${c.regression} regression, ${c.refused} refused, ${c.inconclusive} undecided, ${c.pass} pass, ${c.new} new. ` +
      `Allowed drop ${pct(o.maxDrop)}, widened to ${o.noiseSigmas}× the robust spread of earlier nights once there are ${o.minHistory}; ` +
      `a drop of the point estimate beyond 3× ${pct(o.maxDrop)} is a regression whatever the confidence; ` +
      `a regression from search brackets needs verdicts at least ${pct(o.minConfidence)} confident when the probes carry confidences.`,
    '',
    '| configuration | verdict | candidate | capacity QPS | interval QPS | reference | reference QPS | drop | drop range | allowed |',
    '|---|---|---|--:|--:|---|--:|--:|--:|--:|',
  ];
  for (const d of r.decisions) {
    const ref = d.reference;
    const refName = ref ? (ref.kind === 'run' ? ref.runIds[0] : `median of ${ref.nights} nights`) : '—';
    lines.push(
      `| ${cell(d.config)} | ${HEADLINE[d.verdict]} | ${cell(d.candidate.runId)} | ${qps(d.candidate.estimateQps)} | [${qps(d.candidate.lowQps)}, ${qps(d.candidate.highQps)}] | ${cell(refName)} | ${ref ? qps(ref.capacityQps) : '—'} | ${pct(d.pointDrop)} | ${d.minDrop === null && d.maxDrop === null ? '—' : `${pct(d.minDrop)} … ${pct(d.maxDrop)}`} | ${pct(d.allowedDrop)} |`,
    );
  }
  lines.push('', '## Decisions', '');
  for (const d of r.decisions) lines.push(`- **${cell(d.config)}**: ${HEADLINE[d.verdict]} — ${d.reason}`);
  if (r.rejectedIndexLines.length) {
    lines.push('', '## Results-index lines not used', '');
    for (const x of r.rejectedIndexLines) lines.push(`- ${cell(x)}`);
  }
  return lines.join('\n') + '\n';
}

const xml = (s: string) => s.replace(/[&<>"']/g, (ch) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[ch]!);

/** JUnit XML: one suite, one test case per configuration. */
export function gateJunit(r: GateResult, suiteName = 'fluidcap capacity gate'): string {
  const c = r.counts;
  const cases = r.decisions.map((d) => {
    const head = `    <testcase classname="fluidcap.capacity" name="${xml(d.config)}" time="0">`;
    const out = `      <system-out>${xml(`${d.candidate.runId}: ${d.candidate.estimateQps} QPS [${qps(d.candidate.lowQps)}, ${qps(d.candidate.highQps)}] (${d.candidate.runDir})\n${d.reason}`)}</system-out>`;
    const body =
      d.verdict === 'regression'
        ? `      <failure type="regression" message="${xml(d.reason)}"/>`
        : d.verdict === 'refused'
          ? `      <error type="refused" message="${xml(d.reason)}"/>`
          : d.verdict === 'inconclusive'
            ? `      <failure type="undecided" message="${xml(`undecided: ${d.reason}`)}"/>`
            : null;
    return [head, ...(body ? [body] : []), out, '    </testcase>'].join('\n');
  });
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${xml(suiteName)}" tests="${r.decisions.length}" failures="${c.regression + c.inconclusive}" errors="${c.refused}" skipped="0">`,
    `  <testsuite name="${xml(suiteName)}" tests="${r.decisions.length}" failures="${c.regression + c.inconclusive}" errors="${c.refused}" skipped="0">`,
    ...cases,
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}

// Label values escaped as the Prometheus text format requires (backslash, quote, newline).
const label = (s: string) => s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');

const VERDICT_CODE: Record<GateVerdict, number> = { pass: 0, new: 0, inconclusive: 1, regression: 2, refused: 3 };

/**
 * The Prometheus textfile: gauges per configuration (NaN-free: a figure a run lacks is left out),
 * labelled by configuration, recipe, engine, model, GPU and the run measured. The run label starts
 * a new series each night, which is what lets a dashboard link a point to its run directory; the
 * textfile collector keeps only the latest file, so old series end rather than pile up.
 */
export function gatePrometheus(r: GateResult): string {
  const metrics: { name: string; help: string; value: (d: ConfigDecision) => number | null }[] = [
    { name: 'fluidcap_capacity_qps', help: 'Capacity estimate (requests per second that meet the SLO).', value: (d) => d.candidate.estimateQps },
    { name: 'fluidcap_capacity_low_qps', help: 'Low end of the capacity\'s interval (after any confirming probes).', value: (d) => d.candidate.lowQps },
    { name: 'fluidcap_capacity_fail_qps', help: 'High end of the capacity\'s interval (a rate the SLO failed at, or the interval\'s upper bound).', value: (d) => (Number.isFinite(d.candidate.highQps) ? d.candidate.highQps : null) },
    { name: 'fluidcap_qps_per_usd_per_hour', help: 'Capacity per dollar per hour of the deployment.', value: (d) => d.candidate.qpsPerUsdPerHour },
    { name: 'fluidcap_usd_per_million_output_tokens', help: 'Dollars per million output tokens at capacity.', value: (d) => d.candidate.usdPerMillionOutputTokens },
    { name: 'fluidcap_reference_capacity_qps', help: 'Capacity the candidate was compared with (baseline run or median of earlier nights).', value: (d) => d.reference?.capacityQps ?? null },
    { name: 'fluidcap_capacity_drop_ratio', help: 'Relative capacity drop against the reference (negative: a gain).', value: (d) => d.pointDrop },
    { name: 'fluidcap_gate_verdict', help: 'Gate verdict: 0 pass or new, 1 undecided, 2 regression, 3 refused.', value: (d) => VERDICT_CODE[d.verdict] },
  ];
  const lines: string[] = [];
  for (const m of metrics) {
    // A refused run's figures are not measurements: only its verdict is exported.
    const rows = r.decisions.map((d) => [d, d.verdict === 'refused' && m.name !== 'fluidcap_gate_verdict' ? null : m.value(d)] as const).filter((x): x is readonly [ConfigDecision, number] => x[1] !== null && Number.isFinite(x[1]));
    if (rows.length === 0) continue;
    lines.push(`# HELP ${m.name} ${m.help}`, `# TYPE ${m.name} gauge`);
    for (const [d, v] of rows) {
      const l = d.candidate.labels;
      const labels = [
        ['config', d.config],
        ['recipe', l.recipe ?? ''],
        ['engine', l.engine ?? ''],
        ['model', l.model ?? ''],
        ['gpu', l.gpu ?? ''],
        ['run', d.candidate.runId],
      ]
        .map(([k, s]) => `${k}="${label(s)}"`)
        .join(',');
      lines.push(`${m.name}{${labels}} ${v}`);
    }
  }
  return lines.join('\n') + '\n';
}

/** One line per configuration for the terminal. */
export function gateLines(r: GateResult): string[] {
  // Index lines not used are told on stderr as they are read (and in --json and the markdown).
  return r.decisions.map((d) => `${(d.verdict === 'inconclusive' ? 'undecided' : d.verdict).padEnd(12)} ${d.config}: ${d.reason}`);
}
