// Ports for engines the tests start. A port the kernel hands out for `listen(0)` lies in the
// ephemeral range, the same range it picks local ports of outgoing connections from: a probe's
// hundreds of connections can take it (or the one next to it) between the asking and a later
// engine's bind, and that engine then fails to start with "port already in use". So ports come
// from below the ephemeral range, where only a listener can hold them, and are checked free.
import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** The low end of this machine's ephemeral port range (Linux's default where it cannot be read). */
function ephemeralLow(): number {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    if (Number.isInteger(low) && low > 1024) return low;
  } catch {
    // Not Linux: fall through.
  }
  return 32768;
}

// The Fetch standard's bad ports at or above 1024: tests read engines with fetch, which refuses
// these before connecting (the product reaches them through node:http).
export const FETCH_BAD_PORTS = new Set([1719, 1720, 1723, 2049, 3659, 4045, 4190, 5060, 5061, 6000, 6566, 6665, 6666, 6667, 6668, 6669, 6679, 6697, 10080]);

function canListen(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen({ port, host, exclusive: true }, () => s.close(() => resolve(true)));
  });
}

/**
 * The first of `count` consecutive ports, all free now on every address, none a port fetch
 * refuses, and all below the ephemeral range (so no outgoing connection takes one later). Engines in the tests listen on
 * the host network, on 0.0.0.0.
 */
export async function freePort(count = 1): Promise<number> {
  const high = ephemeralLow() - count;
  const low = Math.min(10_000, high - 1000);
  for (let attempt = 0; attempt < 200; attempt++) {
    const base = low + Math.floor(Math.random() * (high - low));
    let free = true;
    for (let p = base; p < base + count && free; p++) free = !FETCH_BAD_PORTS.has(p) && (await canListen(p, '0.0.0.0'));
    if (free) return base;
  }
  throw new Error(`no ${count} consecutive free ports between ${low} and ${high + count}`);
}
