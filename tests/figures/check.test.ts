// `fluidcap figure --check` and metron-fig5d: without an endpoints file there is nothing of ours to
// measure for it, so its claims (all on the paper's public endpoints) are listed, not comparable
// here with the reason, without a run; check.md and check.csv carry them like any figure's.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runFigureCheck } from '../../harness/figures/check.ts';

test('--check without --endpoints: metron-fig5d\u2019s claims listed, not comparable here (public endpoint), no run', async () => {
  const out = mkdtempSync(join(tmpdir(), 'fluidcap-check-'));
  try {
    const lines: string[] = [];
    const c = await runFigureCheck({ outDir: out, timeScale: 0.5, figures: ['metron-fig5d'], log: (l) => lines.push(l) });
    assert.is(c.status, 'completed');
    const [f] = c.figures;
    assert.equal([f.figure, f.dir, f.error], ['metron-fig5d', null, null]);
    const judged = f.rows.filter((r) => r.kind !== 'setup');
    assert.ok(judged.length >= 3, `${judged.length} judged rows`);
    for (const r of judged) {
      assert.is(r.verdict, 'not comparable here', r.id);
      assert.match(r.reason, /^public endpoint: /, r.id);
    }
    assert.match(lines.join('\n'), /metron-fig5d: no --endpoints, so no run: 0 hold, 0 do not hold, \d+ not comparable here/);
    assert.match(c.table, /^metron-fig5d\s+M-23\s+ordering\s.*not comparable here\s+public endpoint: /m);
    const dir = join(out, readdirSync(out)[0]);
    assert.ok(existsSync(join(dir, 'check.csv')));
    assert.match(readFileSync(join(dir, 'check.csv'), 'utf8'), /^metron-fig5d,M-23,ordering,/m);
    assert.equal(readdirSync(dir).sort(), ['check.csv', 'check.md'], 'no figure directory: nothing ran');
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
});

test.run();
