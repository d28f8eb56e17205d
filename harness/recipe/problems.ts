// Turns zod issues into the one-line problems users read: `file: path must ..., got value (type)`,
// every problem at once, the value looked up in the raw input so it is shown as the user wrote it.
import type { z } from 'zod';
import { describeValue } from '../util/errors.ts';

type Path = readonly PropertyKey[];

/** Renders a path the way the user would write it in YAML: `search.qps.max`, `profile.promptLengths[2]`. */
export function formatPath(path: Path, prefix: Path = []): string {
  let out = '';
  for (const key of [...prefix, ...path]) {
    if (typeof key === 'number') out += `[${key}]`;
    else out += out ? `.${String(key)}` : String(key);
  }
  return out || '(top level)';
}

function valueAt(raw: unknown, path: Path): unknown {
  let v: unknown = raw;
  for (const key of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[key as string];
  }
  return v;
}

// zod's default wording starts like this; anything else is a schema's own sentence, kept as written.
const ZOD_DEFAULT = /^(Invalid|Too (big|small)|Expected|Unrecognized)/;

function describeIssue(issue: z.core.$ZodIssue, value: unknown): string {
  const own = !ZOD_DEFAULT.test(issue.message);
  switch (issue.code) {
    case 'invalid_type':
      if (value === undefined) return `is required (expected ${issue.expected})`;
      return own ? issue.message : `must be ${article(issue.expected)}`;
    case 'too_small':
      if (own) return issue.message;
      if (issue.origin === 'string' && Number(issue.minimum) === 1) return 'must not be empty';
      return `must be ${issue.inclusive ? '>=' : '>'} ${String(issue.minimum)}${issue.origin === 'array' ? ' items' : issue.origin === 'string' ? ' characters long' : ''}`;
    case 'too_big':
      if (own) return issue.message;
      return `must be ${issue.inclusive ? '<=' : '<'} ${String(issue.maximum)}${issue.origin === 'array' ? ' items' : issue.origin === 'string' ? ' characters long' : ''}`;
    case 'invalid_value': {
      const choices = issue.values.map((v) => JSON.stringify(v)).join(', ');
      // zod reports a missing enum field as a wrong value: say it is missing.
      return value === undefined ? `is required (one of ${choices})` : `must be one of ${choices}`;
    }
    case 'unrecognized_keys':
      return `has unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.join(', ')}`;
    case 'invalid_union':
      return issue.message.startsWith('Invalid input') ? 'has a value of the wrong shape' : issue.message;
    case 'not_multiple_of':
      return `must be a multiple of ${String(issue.divisor)}`;
    case 'invalid_format':
      // The schema's own sentence ("must be an image reference such as ...") says what is wanted;
      // zod's default names only the check ("Invalid string: must match pattern ...").
      return own ? issue.message : `must be a valid ${issue.format === 'regex' ? 'value' : issue.format}`;
    default:
      return issue.message;
  }
}

function article(type: string): string {
  if (type === 'int') return 'an integer';
  return /^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`;
}

/** Every issue as `file: path message, got value (type)`; `prefix` places a section inside the file. */
export function formatIssues(issues: readonly z.core.$ZodIssue[], raw: unknown, file: string, prefix: Path = []): string[] {
  return issues.flatMap((issue) => {
    if (issue.code === 'invalid_key') {
      // A map key (a secret's container variable, a group name) that its own rule refuses.
      const key = issue.path[issue.path.length - 1];
      const inner = issue.issues[0] as z.core.$ZodIssue | undefined;
      const rule = inner ? describeIssue(inner, key) : 'is not a valid name';
      return `${file}: ${formatPath(issue.path.slice(0, -1), prefix)} has the name ${describeValue(key)}, which ${rule}`;
    }
    if (issue.code === 'unrecognized_keys') {
      // One line per unknown key, with its full path and value, like every other problem.
      const parent = valueAt(raw, issue.path);
      return issue.keys.map(
        (key) => `${file}: ${formatPath([...issue.path, key], prefix)} is not a known field, got ${describeValue((parent as Record<string, unknown>)?.[key])}`,
      );
    }
    const value = valueAt(raw, issue.path);
    const msg = describeIssue(issue, value);
    const got = value === undefined ? '' : `, got ${describeValue(value)}`;
    return `${file}: ${formatPath(issue.path, prefix)} ${msg}${got}`;
  });
}
