// Text prompts for engines that refuse token ids: measures how many tokens our words make with
// the engine's own `/tokenize` (vLLM, the simulated engine), so a text prompt of N tokens is
// N / tokensPerWord words. Engines without /tokenize leave it at 1 and the drift check reports the truth.
import http from 'node:http';
import https from 'node:https';
import { textPrompt } from './prompt.ts';

/** Tokens per word of our text prompts as the engine counts them, or null with the reason. */
export async function calibrateTokensPerWord(baseUrl: string, model: string, apiKey?: string): Promise<{ tokensPerWord: number | null; note: string }> {
  const words = 400;
  const origin = new URL(baseUrl);
  const url = new URL('/tokenize', origin);
  const body = JSON.stringify({ model, prompt: textPrompt(1, 0, words), add_special_tokens: false });
  const transport = url.protocol === 'https:' ? https : http;
  try {
    const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const headers: Record<string, string | number> = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) };
      if (apiKey) headers.authorization = `Bearer ${apiKey}`;
      const req = transport.request(url, { method: 'POST', headers, timeout: 10_000 }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (b: Buffer) => parts.push(b));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error('timed out')));
      req.on('error', reject);
      req.end(body);
    });
    if (status !== 200) return { tokensPerWord: null, note: `POST /tokenize answered ${status}: text prompt lengths are uncalibrated (1 token per word assumed)` };
    const obj = JSON.parse(text) as { count?: unknown; tokens?: unknown };
    const count = typeof obj.count === 'number' ? obj.count : Array.isArray(obj.tokens) ? obj.tokens.length : null;
    if (count === null || count <= 0) return { tokensPerWord: null, note: 'POST /tokenize gave no count: text prompt lengths are uncalibrated' };
    return { tokensPerWord: count / words, note: `text prompts calibrated with /tokenize: ${(count / words).toFixed(3)} tokens per word` };
  } catch (err) {
    return { tokensPerWord: null, note: `POST /tokenize failed (${(err as Error).message}): text prompt lengths are uncalibrated` };
  }
}
