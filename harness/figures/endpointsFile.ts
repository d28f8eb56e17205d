// The endpoints file of `fluidcap figure metron-fig5d --endpoints <file>`: the OpenAI-compatible
// servers the figure measures, as the paper measured Groq, Fireworks and Anyscale, and optionally
// the workload and prefill profile they all get. API keys are named by environment variable, never
// written. Pure: the YAML comes in already decoded.
//
//   endpoints:
//     - name: groq                 # letters, digits, - and _; the key of its values in claims.csv
//       label: Groq                # optional, for charts (default: the name)
//       url: https://api.example   # the server's base URL; the client requests /v1/... on it
//       model: llama3-70b          # optional: the endpoint's first listed model
//       apiKeyEnv: GROQ_API_KEY    # optional: the environment variable holding its key
//   workload: { ... }              # optional: a recipe's workload section (default: the paper's)
//   profile: { ... }               # optional: a recipe's profile section
import { z } from 'zod';
import { UserError } from '../util/errors.ts';
import { formatIssues } from '../recipe/problems.ts';

const endpoint = z.strictObject({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$/, 'must be 1-40 letters, digits, - or _ (it names the endpoint\u2019s run and its values)'),
  label: z.string().min(1).max(60).optional(),
  url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL such as https://api.example.com' }),
  model: z.string().min(1).optional(),
  apiKeyEnv: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'must be an environment variable name such as GROQ_API_KEY (the key itself never goes in a file)').optional(),
});

const section = z.record(z.string(), z.unknown());

const fileSchema = z.strictObject({
  endpoints: z.array(endpoint).min(1, 'must list at least one endpoint'),
  workload: section.optional(),
  profile: section.optional(),
});

export type EndpointSpec = z.output<typeof endpoint>;
export type EndpointsFile = z.output<typeof fileSchema>;

/**
 * The paper's workload for Fig. 5 (M-API): prompts of 256 to 8k tokens and at most 256 output
 * tokens. The distributions are not printed; uniform, and the 32-token floor of outputs (so each
 * request has TBTs to judge), are fluidcap's. Text prompts in chat form, which hosted APIs accept.
 */
export const PAPER_ENDPOINT_WORKLOAD = {
  api: 'chat',
  prompts: { format: 'text' },
  lengths: { prompt: { dist: 'uniform', min: 256, max: 8192 }, output: { dist: 'uniform', min: 32, max: 256 } },
  arrivals: { process: 'poisson' },
  seed: 42,
} as const;

/**
 * The prefill profile an endpoint gets unless the file says otherwise: the workload's prompt range,
 * and bounds loose enough for a server shared with others (its fit only sets first-token deadlines).
 */
export const ENDPOINT_PROFILE = { promptLengths: [256, 1024, 2048, 4096, 8192], repeats: 3, minR2: 0, maxRepeatCv: 100 } as const;

/** Checks an endpoints file: each endpoint's fields, and names used once. */
export function parseEndpointsFile(raw: unknown, file: string): EndpointsFile {
  const r = fileSchema.safeParse(raw);
  if (!r.success) throw new UserError(formatIssues(r.error.issues, raw, file).join('\n'));
  const seen = new Set<string>();
  r.data.endpoints.forEach((e, i) => {
    if (seen.has(e.name.toLowerCase())) throw new UserError(`${file}: endpoints[${i}].name ${JSON.stringify(e.name)} is used twice`);
    seen.add(e.name.toLowerCase());
  });
  return r.data;
}

/** The endpoint's URL as a README may show it: no user, password, query or fragment. */
export function shownUrl(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}${u.pathname === '/' ? '' : u.pathname}`;
}
