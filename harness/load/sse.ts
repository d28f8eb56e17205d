// An incremental Server-Sent Events parser (WHATWG framing): CRLF, LF or CR line ends, `data:`
// with or without one space, multi-line data, comments, `event`/`id`/`retry`, events split
// anywhere across reads. Ours so that the stream decoder can pin each event to the read that
// completed it; differential-fuzzed against eventsource-parser in tests/load/sse-fuzz.test.ts.

/** One dispatched event; `id` is the id set within this event's block (as eventsource-parser 3 reports it). */
export interface SseEvent {
  event?: string;
  id?: string;
  data: string;
}

const LF = 10;
const CR = 13;
const COLON = 58;
const SPACE = 32;

/** Feeds decoded text in any split; calls `onEvent` for each event completed by that text. */
export class SseParser {
  private partial = '';
  private skipLeadingLF = false;
  private data = '';
  private dataLines = 0;
  private eventType: string | undefined;
  private id: string | undefined;
  /** The last `retry:` value in ms, kept for completeness (the client does not reconnect). */
  retryMs: number | undefined;

  feed(chunk: string, onEvent: (e: SseEvent) => void): void {
    let text = this.partial === '' ? chunk : this.partial + chunk;
    this.partial = '';
    let start = 0;
    if (this.skipLeadingLF && text.length > 0) {
      if (text.charCodeAt(0) === LF) start = 1;
      this.skipLeadingLF = false;
    }
    const n = text.length;
    for (let i = start; i < n; i++) {
      const c = text.charCodeAt(i);
      if (c !== LF && c !== CR) continue;
      this.line(text, start, i, onEvent);
      if (c === CR) {
        // A CR may be the first half of a CRLF split across reads: swallow a following LF.
        if (i + 1 < n) {
          if (text.charCodeAt(i + 1) === LF) i++;
        } else {
          this.skipLeadingLF = true;
        }
      }
      start = i + 1;
    }
    if (start < n) this.partial = text.slice(start);
    text = '';
  }

  private line(text: string, start: number, end: number, onEvent: (e: SseEvent) => void): void {
    if (start === end) {
      if (this.dataLines > 0) onEvent({ event: this.eventType, id: this.id, data: this.data });
      this.data = '';
      this.dataLines = 0;
      this.eventType = undefined;
      this.id = undefined;
      return;
    }
    if (text.charCodeAt(start) === COLON) return; // comment
    let colon = -1;
    for (let i = start; i < end; i++) {
      if (text.charCodeAt(i) === COLON) {
        colon = i;
        break;
      }
    }
    const field = colon < 0 ? text.slice(start, end) : text.slice(start, colon);
    const valueStart = colon < 0 ? end : text.charCodeAt(colon + 1) === SPACE ? colon + 2 : colon + 1;
    const value = colon < 0 ? '' : text.slice(valueStart, end);
    switch (field) {
      case 'data':
        this.data = this.dataLines === 0 ? value : `${this.data}\n${value}`;
        this.dataLines++;
        break;
      case 'event':
        this.eventType = value || undefined;
        break;
      case 'id':
        if (!value.includes('\0')) this.id = value;
        break;
      case 'retry':
        if (/^\d+$/.test(value)) this.retryMs = Number(value);
        break;
      default:
      // Unknown fields are ignored, as the standard says.
    }
  }
}
