// Writes the report files (Markdown and HTML) for a finished run from its archived files (runCapacity calls
// it after a completed search; `fluidcap report` calls it to rewrite them). Thin: read, build, render.
import { join } from 'node:path';
import { REPORT_FILES, runPaths } from '../runDir/layout.ts';
import { writeFileIn } from '../util/confinedFs.ts';
import { loadRun } from './loadRun.ts';
import { buildReport } from './buildReport.ts';
import { renderMarkdown } from './markdown.ts';
import { renderHtml } from './html.ts';
import { reportCsvFiles } from './csv.ts';

/** (Re)writes the run's reports and their CSV tables; returns the files written (relative to runDir). Throws UserError (naming the file) when the run has no capacity.json. */
export function writeReports(runDir: string): string[] {
  const data = loadRun(runDir);
  const blocks = buildReport(data);
  const paths = runPaths(runDir);
  // Renamed into place: a report file that is a link (a downloaded run) is replaced, never written through.
  writeFileIn(runDir, paths.reportMd, renderMarkdown(blocks));
  writeFileIn(runDir, paths.reportHtml, renderHtml(blocks, `Capacity report: ${data.runId}`));
  const csv = reportCsvFiles(blocks);
  for (const f of csv) writeFileIn(runDir, join(runDir, f.file), f.text);
  return [...REPORT_FILES, ...csv.map((f) => f.file)];
}
