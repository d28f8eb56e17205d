// Finds the request dialect of a server before anything is measured: one small streamed request
// written as the run writes its requests (every field fluidcap may add), and, while the server
// answers 400/422 naming one of them or the token-id prompt, once more without what it named.
// The decisions are dialect.ts's; this part only sends.
import { apiPath, requestBody } from './prompt.ts';
import { serverUrl } from './serverUrl.ts';
import { ADDED_FIELDS, nextStep, type Dialect, type DialectFound } from './dialect.ts';
import type { ServerTarget } from './tokenizeCalibration.ts';

/** Negotiates the dialect; throws with the server's answer when it refuses something fluidcap did not add. */
export async function negotiateDialect(
  t: ServerTarget,
  start: { format: 'token-ids' | 'text'; tokenIdRange?: [number, number]; nonce?: string },
  post: (url: URL, body: string) => Promise<{ status: number; text: string }>,
): Promise<DialectFound> {
  let dialect: Dialect = { omitFields: [], promptFormat: t.api === 'chat' ? 'text' : start.format };
  const url = serverUrl(t.baseUrl, apiPath(t.api));
  // Every added field can be named at most once, and the prompt form once: more answers would repeat one.
  const limit = ADDED_FIELDS.length + 2;
  for (let attempt = 1; attempt <= limit; attempt++) {
    const body = requestBody(
      { api: t.api, model: t.model, format: dialect.promptFormat, seed: 0, nonce: start.nonce, stream: 'dialect', tokenIdRange: start.tokenIdRange, continuousUsage: true, extraBody: t.extraBody, omitFields: dialect.omitFields },
      0,
      8,
      2,
    );
    const answer = await post(url, body);
    const step = nextStep(dialect, true, { status: answer.status, body: answer.text });
    if (step.kind === 'accepted') return { dialect, requestedFormat: start.format, attempts: attempt };
    if (step.kind === 'refuse') throw new Error(`POST ${apiPath(t.api)} ${step.message}`);
    dialect = step.dialect;
  }
  throw new Error(`POST ${apiPath(t.api)} kept refusing after ${limit} requests, each without what the last answer named`);
}
