// The report's token-accounting table says "no witness" for a probe whose engine exports no
// prefix-cache counter (vLLM 0.8.5's V0 engine), where it used to show a bare "—".
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeSyntheticRun } from './syntheticRun.ts';
import { loadRun } from '../../harness/report/loadRun.ts';
import { buildReport } from '../../harness/report/buildReport.ts';
import { renderMarkdown } from '../../harness/report/markdown.ts';

test('a probe without a prefix-cache counter reads "no witness"; one with it, its growth', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'fluidcap-witness-'));
  try {
    const dir = writeSyntheticRun(join(tmp, 'run'));
    const probes = readdirSync(join(dir, 'probes')).sort();
    const file = join(dir, 'probes', probes[0], 'summary.json');
    const s = JSON.parse(readFileSync(file, 'utf8'));
    s.serverMetrics = { ...s.serverMetrics, cachedPromptTokens: null, prefixCacheWitness: 'no witness: vLLM 0.8.5 V0 exports no prefix-cache hit counter' };
    writeFileSync(file, JSON.stringify(s));
    const text = renderMarkdown(buildReport(loadRun(dir)));
    const rows = text.split('\n').filter((l) => /^\| [123] \|/.test(l) && l.includes('receive') === false);
    const accounting = rows.filter((l) => l.split('|').length >= 12);
    assert.ok(accounting.some((l) => /^\| 1 \|.*\| no witness \|$/.test(l)), accounting.join('\n'));
    assert.ok(accounting.some((l) => /^\| 2 \|.*\| 0 \|$/.test(l)), accounting.join('\n'));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
});

test.run();
