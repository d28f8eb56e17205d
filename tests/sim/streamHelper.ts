// Test helper: sends one streamed request to the simulated engine and collects every SSE data line
// with its engine emit stamp (the harness's own client lives in harness/load/; this stays minimal).

// One received event.
export interface ReceivedEvent {
  data: string;
  json: Record<string, unknown> | null;
  emitNs: bigint | null;
}

// Streams `body` to `url`; resolves with the events and HTTP status when the stream ends.
export async function streamRequest(url: string, body: unknown, onEvent?: (e: ReceivedEvent) => void): Promise<{ status: number; events: ReceivedEvent[]; raw: string }> {
  const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  const events: ReceivedEvent[] = [];
  let raw = '';
  let buf = '';
  const decoder = new TextDecoder();
  for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) {
    const text = decoder.decode(part, { stream: true });
    raw += text;
    buf += text;
    let idx: number;
    while ((idx = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, idx);
      buf = buf.slice(idx + 2);
      if (!block.startsWith('data: ')) continue;
      const data = block.slice(6);
      let json: Record<string, unknown> | null = null;
      try {
        json = data === '[DONE]' ? null : JSON.parse(data);
      } catch {
        json = null;
      }
      const e = { data, json, emitNs: json && typeof json.fluidcap_emit_ns === 'string' ? BigInt(json.fluidcap_emit_ns) : null };
      events.push(e);
      onEvent?.(e);
    }
  }
  return { status: res.status, events, raw };
}

// A prompt of exactly n tokens (words).
export function wordsPrompt(n: number, salt = 'w'): string {
  return Array.from({ length: n }, (_, i) => `${salt}${i}`).join(' ');
}
