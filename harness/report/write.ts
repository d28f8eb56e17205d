// Writes the report files (Markdown and HTML) for a finished run from its archived files (runCapacity calls
// it after a completed search; `fluidcap report` calls it to rewrite them). Thin: read, build, render.
import { writeFileSync } from 'node:fs';
import { runPaths } from '../runDir/layout.ts';
import { loadRun } from './loadRun.ts';
import { buildReport } from './buildReport.ts';
import { renderMarkdown } from './markdown.ts';
import { renderHtml } from './html.ts';

/** (Re)writes the run's reports; throws UserError (naming the file) when the run has no capacity.json. */
export function writeReports(runDir: string): void {
  const data = loadRun(runDir);
  const blocks = buildReport(data);
  const paths = runPaths(runDir);
  writeFileSync(paths.reportMd, renderMarkdown(blocks));
  writeFileSync(paths.reportHtml, renderHtml(blocks, `Capacity report: ${data.runId}`));
}
