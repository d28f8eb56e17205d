// The progress display of `fluidcap run`: phase, probe, rate, requests done and ETA. On a terminal
// one status line is redrawn in place (at most 4 times a second); otherwise a line every 10 s.
import { performance } from 'node:perf_hooks';

export interface Progress {
  phase(name: string, detail: string, probe?: { planned: number; qps: number }): void;
  update(p: { done: number; total: number; elapsedS?: number }): void;
  /** Prints a log line without tearing the status line. */
  log(line: string): void;
  done(): void;
}

/** A progress display writing to `out` (stderr in the CLI); `tty` decides in-place redraws. */
export function createProgress(out: NodeJS.WriteStream, tty = Boolean(out.isTTY)): Progress {
  let phase = '';
  let detail = '';
  let probe: { planned: number; qps: number } | null = null;
  let line = '';
  let lastDrawMs = 0;
  const t0 = performance.now();
  const clock = () => {
    const s = Math.round((performance.now() - t0) / 1000);
    return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')}`;
  };
  const draw = (force = false) => {
    const nowMs = performance.now();
    if (!force && nowMs - lastDrawMs < (tty ? 250 : 10_000)) return;
    lastDrawMs = nowMs;
    const text = `[${clock()}] ${phase}: ${detail}${line ? ` — ${line}` : ''}`;
    if (tty) out.write(`\r\x1b[2K${text.slice(0, (out.columns ?? 120) - 1)}`);
    else out.write(`${text}\n`);
  };
  const clear = () => {
    if (tty) out.write('\r\x1b[2K');
  };
  return {
    phase(name, d, p) {
      phase = name;
      detail = d;
      probe = p ?? null;
      line = '';
      draw(true);
    },
    update({ done, total, elapsedS }) {
      let eta = '';
      if (probe && elapsedS !== undefined) {
        // Open loop: the probe lasts about planned/rate seconds, whatever the engine does.
        const remainingS = Math.max(0, total / probe.qps - elapsedS);
        eta = `, ETA ${Math.ceil(remainingS)} s`;
      }
      line = `${done}/${total} requests${eta}`;
      draw();
    },
    log(text) {
      clear();
      out.write(`${text}\n`);
      if (tty && phase) draw(true);
    },
    done() {
      clear();
    },
  };
}
