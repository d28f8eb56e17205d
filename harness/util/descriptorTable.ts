// Grows this process's file-descriptor table ahead of time. Linux grows the table by doubling, and
// in a process with more than one thread each growth waits for an RCU grace period
// (expand_fdtable → synchronize_rcu) inside whichever socket() or accept() crossed the size: 3-6 ms
// on this kind of VM, during which that thread does nothing else. For a client that is a receiving
// thread opening its 65th, 129th, 257th or 513th connection while every open stream's chunks wait
// behind it; for a server it is the accept loop. A single-threaded client never waits, so the stall
// is ours alone. The table never shrinks, so opening and closing descriptors once, before any
// timing starts, moves every growth out of the measurement.
import { closeSync, openSync, readdirSync, readFileSync } from 'node:fs';

/** The most descriptors worth reserving: a table this size costs the kernel 128 KB. */
export const MAX_RESERVED_DESCRIPTORS = 16_384;

/**
 * Makes room for `count` more open descriptors (at most MAX_RESERVED_DESCRIPTORS) without the table
 * growing again; returns the room made or already there (less at the descriptor limit, 0 where
 * /dev/null cannot be opened). Blocks for the growths it causes (a few ms each), so call it before
 * timing starts.
 */
export function reserveDescriptors(count: number): number {
  const wanted = Math.min(count, MAX_RESERVED_DESCRIPTORS);
  const size = descriptorTableSize();
  const open = openDescriptorCount();
  // Already room: a sweep's later probes in the same process pay nothing.
  if (size !== null && open !== null && size >= open + wanted) return wanted;
  const opened: number[] = [];
  try {
    for (let i = 0; i < wanted; i++) opened.push(openSync('/dev/null', 'r'));
  } catch {
    // At the limit (EMFILE) or on a platform without /dev/null: the room opened so far stays.
  } finally {
    for (const fd of opened) closeSync(fd);
  }
  return opened.length;
}

/** The current size of this process's descriptor table (Linux's FDSize), or null where unknown. */
export function descriptorTableSize(): number | null {
  try {
    const m = /^FDSize:\s*(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

/** How many descriptors this process has open (Linux), or null where unknown. */
export function openDescriptorCount(): number | null {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return null;
  }
}
