// The line vLLM 0.8.5 logs for every request unless --disable-log-requests (RequestLogger): its
// whole prompt and all its token ids, tens of KB for a 4K-token prompt. Pure.
import { wordIds } from './text.ts';

/** vLLM's "Received request" line for a completions or chat body. */
export function receivedRequestLine(requestId: string, body: unknown, vocabSize: number): string {
  const b = (body && typeof body === 'object' ? body : {}) as Record<string, unknown>;
  let prompt: string;
  let ids: number[];
  if (Array.isArray(b.prompt) && b.prompt.every((t) => typeof t === 'number')) {
    prompt = '';
    ids = b.prompt as number[];
  } else {
    prompt = typeof b.prompt === 'string' ? b.prompt : Array.isArray(b.messages) ? JSON.stringify(b.messages) : '';
    ids = wordIds(prompt, vocabSize);
  }
  const maxTokens = b.max_tokens ?? b.max_completion_tokens ?? null;
  return (
    `INFO [logger.py:39] Received request ${requestId}: prompt: ${JSON.stringify(prompt)}, ` +
    `params: SamplingParams(n=1, temperature=${b.temperature ?? 1.0}, max_tokens=${maxTokens}, min_tokens=${b.min_tokens ?? 0}, ignore_eos=${b.ignore_eos === true ? 'True' : 'False'}), ` +
    `prompt_token_ids: [${ids.join(', ')}], lora_request: None, prompt_adapter_request: None.`
  );
}
