// Writes the report files (Markdown and HTML) for a finished run from its archived files (runCapacity calls
// it after a completed search; `fluidcap report` calls it to rewrite them). Thin: read, build, render.
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { REPORT_FILES, isReportChartSpec, reportChartSpec, runPaths } from '../runDir/layout.ts';
import { writeFileIn } from '../util/confinedFs.ts';
import { loadRun } from './loadRun.ts';
import { buildReport } from './buildReport.ts';
import { renderMarkdown } from './markdown.ts';
import { renderPage } from './html.ts';
import { reportCsvFiles } from './csv.ts';

/**
 * (Re)writes the run's reports, their CSV tables and each chart's Vega-Lite spec; resolves to the
 * files written (relative to runDir). Throws UserError (naming the file) at once, before anything
 * is written, when the run cannot be read (no capacity.json, an input that is a link).
 */
export function writeReports(runDir: string): Promise<string[]> {
  const data = loadRun(runDir);
  const blocks = buildReport(data);
  return writeBlocks(runDir, data.runId, blocks);
}

async function writeBlocks(runDir: string, runId: string, blocks: ReturnType<typeof buildReport>): Promise<string[]> {
  const paths = runPaths(runDir);
  // Charts are drawn first, so a drawing that fails leaves the previous reports in place.
  const page = await renderPage(blocks, `Capacity report: ${runId}`);
  // Renamed into place: a report file that is a link (a downloaded run) is replaced, never written through.
  writeFileIn(runDir, paths.reportMd, renderMarkdown(blocks));
  writeFileIn(runDir, paths.reportHtml, page.html);
  const csv = reportCsvFiles(blocks);
  for (const f of csv) writeFileIn(runDir, join(runDir, f.file), f.text);
  const specs = page.charts.map((c) => ({ file: reportChartSpec(c.slug), text: JSON.stringify(c.spec, null, 1) + '\n' }));
  for (const f of specs) writeFileIn(runDir, join(runDir, f.file), f.text);
  // A chart the report no longer draws leaves no spec behind to be mistaken for one of this report's.
  const current = new Set(specs.map((f) => f.file));
  for (const name of readdirSync(runDir)) if (isReportChartSpec(name) && !current.has(name)) rmSync(join(runDir, name), { force: true });
  return [...REPORT_FILES, ...csv.map((f) => f.file), ...specs.map((f) => f.file)];
}
