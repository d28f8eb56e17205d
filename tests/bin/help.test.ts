// Every `--help` as a user reads it (the real CLI, one process per verb): each ends with an "Exit
// codes:" section that has 0, 1 (a bug) and 2 (bad input), and every description (the command's,
// each positional's, each option's, each exit code's meaning) starts in lower case, as yargs'
// section headings stay capitalised. A first word in capitals (TBT, SLO, JSON) is an acronym.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { join, resolve } from 'node:path';

const ROOT = resolve(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'bin', 'fluidcap.js');
const VERBS = [[], ['run'], ['profile'], ['probe'], ['analyze'], ['report'], ['compare'], ['sweep'], ['figure'], ['sim'], ['sim', 'serve'], ['hosts'], ['clean']];

function help(verb: string[]): Promise<string> {
  return new Promise((done, fail) => {
    execFile(process.execPath, [BIN, ...verb, '--help'], { cwd: ROOT, timeout: 60_000 }, (err, stdout, stderr) => (err ? fail(new Error(`${verb.join(' ')} --help: ${err.message}\n${stderr}`)) : done(stdout)));
  });
}

/** The descriptions a help text holds, each with where it was found. */
function descriptions(text: string): { where: string; text: string }[] {
  const out: { where: string; text: string }[] = [];
  const lines = text.split('\n');
  // The command's own description: the first paragraph after the usage line.
  const first = lines.slice(1).find((l) => l.trim() !== '');
  if (first && !/^[A-Z][a-z]+( codes)?:$/.test(first)) out.push({ where: 'command', text: first.trim() });
  let section = '';
  for (const line of lines) {
    const heading = /^([A-Z][a-z]+(?: codes)?):$/.exec(line);
    if (heading) {
      section = heading[1];
      continue;
    }
    let m: RegExpExecArray | null = null;
    if (section === 'Options') m = /^ {2,6}(?:-\w, )?(--[\w-]+)(?: +(\S.*))?$/.exec(line);
    else if (section === 'Positionals') m = /^ {2}([\w-]+) +(\S.*)$/.exec(line);
    else if (section === 'Commands') m = /^ {2}(fluidcap \S+(?: [<[][^ ]+)*) {2,}(\S.*)$/.exec(line);
    else if (section === 'Exit codes') m = /^ {2}(\d[\d-]*) +(\S.*)$/.exec(line);
    if (m && m[2]) out.push({ where: `${section} ${m[1]}`, text: m[2] });
  }
  return out;
}

for (const verb of VERBS) {
  const name = ['fluidcap', ...verb].join(' ');
  test(`${name} --help: an "Exit codes:" section with 0, 1 and 2; every description in lower case`, async () => {
    const text = await help(verb);
    assert.match(text, /^Exit codes:$/m, `${name} --help has no Exit codes section:\n${text}`);
    const codes = text.slice(text.indexOf('Exit codes:')).split('\n').map((l) => /^ {2}(\d+)/.exec(l)?.[1]).filter(Boolean);
    for (const code of ['0', '1', '2']) assert.ok(codes.includes(code), `${name}: exit code ${code} is not listed (${codes.join(', ')})`);
    const found = descriptions(text);
    assert.ok(found.some((d) => d.where.startsWith('Options')), `no options parsed from:\n${text}`);
    for (const d of found) {
      const word = /^[^\s,:;(]+/.exec(d.text)?.[0] ?? '';
      const acronym = /^[A-Z0-9_/]{2,}s?$/.test(word.replace(/[^\w/]/g, ''));
      assert.ok(!/^[A-Z]/.test(d.text) || acronym, `${name}: ${d.where} starts with a capital: "${d.text}"`);
    }
  });
}

test.run();
