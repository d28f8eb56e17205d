// `fluidcap report <runDir>`: (re)writes report.md and report.html from a run's archived files, so
// a report can be regenerated after the renderer improves, without re-running anything.
import { join } from 'node:path';
import { verb } from '../command.ts';
import { writeReports } from '../../report/write.ts';
import { REPORT_FILES, RUN_FILES } from '../../runDir/layout.ts';


export const reportCommand = verb({
  command: 'report <runDir>',
  describe: `write ${REPORT_FILES.join(' and ')} (and each table as CSV and each chart as a Vega-Lite spec beside them) for a finished run (results/<runId>)`,
  exits: [
    [0, 'reports written'],
    [2, 'not a finished run (the message names the missing or bad file)'],
  ],
  builder: (y) =>
    y
      .positional('runDir', { type: 'string', demandOption: true, describe: `run directory holding ${RUN_FILES.capacity}` })
      .option('json', { type: 'boolean', default: false, describe: 'print {"runDir", "files": [...]} instead of a line per file' }),
  handler: async (argv) => {
    const files = (await writeReports(argv.runDir)).map((f) => join(argv.runDir, f));
    if (argv.json) process.stdout.write(JSON.stringify({ runDir: argv.runDir, files }) + '\n');
    else for (const f of files) process.stdout.write(`wrote ${f}\n`);
  },
});
