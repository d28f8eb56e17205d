// An incremental HTTP/1.1 response reader over raw bytes, for the receiving thread's hot path:
// status line and headers once, then the body (chunked, Content-Length or close-delimited) copied
// straight into one growing buffer with no per-read allocation. Reads may split anywhere, inside
// a header, a chunk-size line or a CRLF. Pure: no sockets, no clocks.

const CR = 13;
const LF = 10;
const MAX_HEAD_BYTES = 64 * 1024;

/** How the body's end is known. */
export type BodyFraming = 'chunked' | 'length' | 'close' | 'none';

/** Where the reader is: reading the head, the body, finished, or stopped on a protocol error. */
export type ReaderState = 'head' | 'body' | 'done' | 'failed';

// Chunked-body sub-states.
const SIZE = 0; // hex digits of a chunk-size line (extensions skipped to LF)
const EXT = 1; // after the digits, skipping `;ext` and whitespace up to LF
const DATA = 2;
const DATA_CR = 3; // the CRLF that follows a chunk's data
const DATA_LF = 4;
const TRAILER = 5; // trailer lines after the last chunk, until an empty line

/** Reads one response; create a new reader for each response on a connection. */
export class HttpResponseReader {
  state: ReaderState = 'head';
  status = 0;
  /** The HTTP minor version (1 for HTTP/1.1, 0 for HTTP/1.0). */
  minorVersion = 1;
  /** Lower-cased header names; repeated headers joined with ", " as RFC 9110 allows. */
  readonly headers = new Map<string, string>();
  framing: BodyFraming = 'none';
  /** Why the reader failed (state 'failed'). */
  error: string | null = null;
  /** The body as decoded so far: `body.subarray(0, bodyLength)`. */
  body: Uint8Array;
  bodyLength = 0;
  /** Bytes after the response's end in the last feed (a server writing past it: never reuse). */
  extraBytes = 0;

  private head: Uint8Array = new Uint8Array(1024);
  private headLength = 0;
  private remaining = 0; // Content-Length left, or the current chunk's data left
  private chunkState = SIZE;
  private sizeDigits = 0;
  private lineLength = 0; // bytes in the current trailer line

  constructor(initialBodyBytes = 16 * 1024) {
    this.body = new Uint8Array(initialBodyBytes);
  }

  /** True once a byte of a response (not just of the connection) has arrived. */
  get started(): boolean {
    return this.headLength > 0 || this.state !== 'head';
  }

  /** Consumes src[start, end); bytes past the response's end are counted in `extraBytes`. */
  feed(src: Uint8Array, start: number, end: number): void {
    let i = start;
    if (this.state === 'head') {
      i = this.feedHead(src, i, end);
      if ((this.state as ReaderState) !== 'body') {
        this.finishFeed(i, end);
        return;
      }
    }
    if (this.state === 'body') {
      if (this.framing === 'chunked') i = this.feedChunked(src, i, end);
      else if (this.framing === 'length') {
        const n = Math.min(this.remaining, end - i);
        this.append(src, i, i + n);
        i += n;
        this.remaining -= n;
        if (this.remaining === 0) this.state = 'done';
      } else {
        this.append(src, i, end);
        i = end;
      }
    }
    this.finishFeed(i, end);
  }

  /** The connection reached EOF: true when that completes the response (close-delimited), else the response is truncated. */
  eof(): boolean {
    if (this.state === 'body' && this.framing === 'close') this.state = 'done';
    return this.state === 'done';
  }

  /** The connection may carry another request after this response. */
  get reusable(): boolean {
    if (this.state !== 'done' || this.framing === 'close' || this.extraBytes > 0) return false;
    const conn = this.headers.get('connection')?.toLowerCase() ?? '';
    const tokens = conn.split(',').map((t) => t.trim());
    if (tokens.includes('close')) return false;
    return this.minorVersion >= 1 || tokens.includes('keep-alive');
  }

  /** The server's `Keep-Alive: timeout=N` hint in seconds, or null. */
  get keepAliveTimeoutS(): number | null {
    const m = /(?:^|[,;\s])timeout\s*=\s*(\d+)/i.exec(this.headers.get('keep-alive') ?? '');
    return m ? Number(m[1]) : null;
  }

  private finishFeed(i: number, end: number): void {
    if (this.state === 'done' && i < end) this.extraBytes += end - i;
  }

  private fail(message: string): number {
    this.state = 'failed';
    this.error = message;
    return Number.MAX_SAFE_INTEGER; // past any end: nothing more is read
  }

  private feedHead(src: Uint8Array, i: number, end: number): number {
    for (; i < end; i++) {
      const c = src[i];
      if (this.headLength === this.head.length) {
        if (this.headLength >= MAX_HEAD_BYTES) return this.fail(`response head longer than ${MAX_HEAD_BYTES} bytes`);
        const grown = new Uint8Array(this.head.length * 2);
        grown.set(this.head);
        this.head = grown;
      }
      this.head[this.headLength++] = c;
      // The head ends at an empty line: LF LF, with or without CRs.
      if (c !== LF) continue;
      const h = this.head;
      const n = this.headLength;
      const emptyLine = (n >= 2 && h[n - 2] === LF) || (n >= 3 && h[n - 2] === CR && h[n - 3] === LF);
      if (!emptyLine) continue;
      i++;
      if (!this.parseHead()) return i;
      // 1xx interim answers (100 Continue, 103 Early Hints) precede the real one.
      if (this.status >= 100 && this.status < 200 && this.status !== 101) {
        this.headLength = 0;
        this.headers.clear();
        this.state = 'head';
        i--; // the loop's i++ resumes right after this head
        continue;
      }
      return i;
    }
    return i;
  }

  /** Parses the complete head; false when it is not an HTTP/1.x response. */
  private parseHead(): boolean {
    const text = Buffer.from(this.head.buffer, this.head.byteOffset, this.headLength).toString('latin1');
    const lines = text.split(/\r?\n/);
    const m = /^HTTP\/1\.(\d) (\d{3})(?: .*)?$/.exec(lines[0]);
    if (!m) {
      this.fail(`not an HTTP/1.x status line: ${JSON.stringify(lines[0].slice(0, 60))}`);
      return false;
    }
    this.minorVersion = Number(m[1]);
    this.status = Number(m[2]);
    for (let k = 1; k < lines.length; k++) {
      const line = lines[k];
      if (line === '') continue;
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      const had = this.headers.get(name);
      this.headers.set(name, had === undefined ? value : `${had}, ${value}`);
    }
    const te = this.headers.get('transfer-encoding')?.toLowerCase();
    const cl = this.headers.get('content-length');
    if (this.status === 204 || this.status === 304 || (this.status >= 100 && this.status < 200)) this.framing = 'none';
    else if (te !== undefined && /(?:^|,)\s*chunked\s*$/.test(te)) this.framing = 'chunked';
    else if (te !== undefined) this.framing = 'close';
    else if (cl !== undefined) {
      if (!/^\d+$/.test(cl)) {
        this.fail(`bad Content-Length ${JSON.stringify(cl.slice(0, 40))}`);
        return false;
      }
      this.framing = 'length';
      this.remaining = Number(cl);
      if (this.body.length < this.remaining) this.body = new Uint8Array(this.remaining);
    } else this.framing = 'close';
    this.state = this.framing === 'none' || (this.framing === 'length' && this.remaining === 0) ? 'done' : 'body';
    return true;
  }

  private feedChunked(src: Uint8Array, i: number, end: number): number {
    while (i < end) {
      switch (this.chunkState) {
        case DATA: {
          const n = Math.min(this.remaining, end - i);
          this.append(src, i, i + n);
          i += n;
          this.remaining -= n;
          if (this.remaining === 0) this.chunkState = DATA_CR;
          break;
        }
        case SIZE: {
          const c = src[i++];
          const d = hexValue(c);
          if (d >= 0) {
            if (++this.sizeDigits > 12) return this.fail('chunk size too large');
            this.remaining = this.remaining * 16 + d;
          } else if (this.sizeDigits === 0) return this.fail(`bad chunk-size byte 0x${c.toString(16)}`);
          else if (c === LF) this.endSizeLine();
          else this.chunkState = EXT;
          break;
        }
        case EXT: {
          if (src[i++] === LF) this.endSizeLine();
          break;
        }
        case DATA_CR: {
          const c = src[i++];
          if (c === CR) this.chunkState = DATA_LF;
          else if (c === LF) this.chunkState = SIZE;
          else return this.fail('missing CRLF after chunk data');
          break;
        }
        case DATA_LF: {
          if (src[i++] !== LF) return this.fail('missing LF after chunk data');
          this.chunkState = SIZE;
          break;
        }
        case TRAILER: {
          const c = src[i++];
          if (c === LF) {
            if (this.lineLength === 0) {
              this.state = 'done';
              return i;
            }
            this.lineLength = 0;
          } else if (c !== CR) this.lineLength++;
          break;
        }
      }
    }
    return i;
  }

  private endSizeLine(): void {
    this.sizeDigits = 0;
    if (this.remaining === 0) {
      this.chunkState = TRAILER;
      this.lineLength = 0;
    } else this.chunkState = DATA;
  }

  private append(src: Uint8Array, from: number, to: number): void {
    const n = to - from;
    if (n <= 0) return;
    if (this.bodyLength + n > this.body.length) {
      const grown = new Uint8Array(Math.max(this.body.length * 2, this.bodyLength + n));
      grown.set(this.body.subarray(0, this.bodyLength));
      this.body = grown;
    }
    // A typical read (one event, a few hundred bytes) is copied byte by byte: set() or Buffer's
    // copy would make a view object per read, which was most of what the receive path allocated.
    const body = this.body;
    if (n <= 1024) {
      let j = this.bodyLength;
      for (let i = from; i < to; i++) body[j++] = src[i];
    } else body.set(src.subarray(from, to), this.bodyLength);
    this.bodyLength += n;
  }
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}
