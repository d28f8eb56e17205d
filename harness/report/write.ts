// Writes report.md and report.html for a finished run from its archived files (runCapacity calls
// it after a completed search; `fluidcap report` calls it to rewrite them). Thin: read, build, render.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadRun } from './loadRun.ts';
import { buildReport } from './buildReport.ts';
import { renderMarkdown } from './markdown.ts';
import { renderHtml } from './html.ts';

/** The files a report consists of, relative to the run directory. */
export const REPORT_FILES = ['report.md', 'report.html'] as const;

/** (Re)writes the run's reports; throws UserError (naming the file) when the run has no capacity.json. */
export function writeReports(runDir: string): void {
  const data = loadRun(runDir);
  const blocks = buildReport(data);
  writeFileSync(join(runDir, 'report.md'), renderMarkdown(blocks));
  writeFileSync(join(runDir, 'report.html'), renderHtml(blocks, `Capacity report: ${data.runId}`));
}
