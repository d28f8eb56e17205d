// Fault injection decisions, drawn per request in arrival order from one seeded generator so a
// run with the same --fault-seed misbehaves the same way. Pure.
import type { FaultConfig } from './config.ts';
import { createRng } from '../util/rng.ts';

// What happens to one HTTP request.
export interface FaultPlan {
  /** Answer immediately with this status instead of generating (429 or 500). */
  httpStatus: 429 | 500 | null;
  /** Hold the stream's writes this many seconds after its first token (real time, not scaled). */
  stallS: number;
  /** Replace one chunk of the stream with a malformed SSE event. */
  malformed: boolean;
}

// Draws the plan for each request in turn (three draws per request, always, so plans stay aligned).
export function faultPlanner(faults: FaultConfig): () => FaultPlan {
  const rng = createRng(faults.seed);
  const rand = () => rng.next();
  return () => {
    const u = rand();
    const stall = rand() < faults.stallFraction;
    const malformed = rand() < faults.malformedSseFraction;
    let httpStatus: 429 | 500 | null = null;
    if (u < faults.http429Fraction) httpStatus = 429;
    else if (u < faults.http429Fraction + faults.http500Fraction) httpStatus = 500;
    return { httpStatus, stallS: stall ? faults.stallForS : 0, malformed };
  };
}
