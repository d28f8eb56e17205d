// Executes a share of a probe plan on one event loop: each request is sent at its planned time
// (timed from the probe's single start, never "send, then sleep"), or waits for a concurrency slot
// and records that wait. Runs inside a worker thread or in-process; it only sends and hands back raw exchanges.
import { StreamClient, type OutgoingRequest, type PreparedSend, type StreamClientOptions } from './streamClient.ts';
import { wakeAt, type Wake } from '../util/wakeAt.ts';
import { apiPath, requestBody, type PromptOptions } from './prompt.ts';
import type { RawExchange } from './exchange.ts';
import type { PlannedRequest } from './plan.ts';

export interface DispatchOptions {
  client: StreamClientOptions;
  prompt: PromptOptions;
  /** Most requests in flight on this loop at once (its share of the probe's cap); none when undefined. */
  concurrency?: number;
}

export interface DispatchHooks {
  onSent(id: string): void;
  onEnd(raw: RawExchange): void;
}

/**
 * A running dispatch: stop() ends sending and cancels in flight; limit(n) drops the requests not yet
 * due whose plan index is n or more (what is in flight runs on); `done` resolves with how many of
 * the requests kept were never sent.
 */
export interface Dispatch {
  stop(reason: string): void;
  limit(planned: number): void;
  done: Promise<{ unsent: number }>;
}

/** Starts sending `requests` (ascending by scheduledS) at their planned times. */
export function startDispatch(planned: readonly PlannedRequest[], options: DispatchOptions, hooks: DispatchHooks): Dispatch {
  const client = new StreamClient(options.client);
  const startNs = options.client.startNs;
  const path = apiPath(options.prompt.api);
  const cap = options.concurrency ?? Infinity;
  let requests = planned;
  const waiting: { req: PlannedRequest; body: string }[] = [];
  let next = 0;
  let finished = false;
  let sent = 0;
  let stopped = false;
  let timer: Wake | null = null;
  let resolveDone!: (v: { unsent: number }) => void;
  const done = new Promise<{ unsent: number }>((r) => (resolveDone = r));
  const bodyOf = (r: PlannedRequest) => requestBody(options.prompt, r.index, r.promptTokens, r.maxTokens);

  const nowNs = () => Number(process.hrtime.bigint() - startNs);
  const finishIfDone = () => {
    if (finished) return;
    if ((stopped || (next === requests.length && waiting.length === 0)) && client.inFlight === 0) {
      finished = true;
      timer?.cancel();
      timer = null;
      client.close();
      resolveDone({ unsent: requests.length - sent });
    }
  };
  const outgoing = (req: PlannedRequest, body: string, slotWaitNs: number): OutgoingRequest => ({
    id: req.id, index: req.index, scheduledNs: Math.round(req.scheduledS * 1e9), slotWaitNs, promptTokens: req.promptTokens, maxTokens: req.maxTokens, path, body,
  });
  const onEnd = (raw: RawExchange) => {
    hooks.onEnd(raw);
    if (!stopped && waiting.length > 0 && client.inFlight < cap) {
      const w = waiting.shift()!;
      fire(w.req, client.prepare(outgoing(w.req, w.body, Math.max(0, nowNs() - Math.round(w.req.scheduledS * 1e9))), onEnd));
    }
    finishIfDone();
  };
  const fire = (req: PlannedRequest, send: PreparedSend) => {
    sent++;
    send.fire();
    hooks.onSent(req.id);
  };
  // The body of the next request is built as soon as the previous send is done (one ahead), and the
  // request itself is prepared (socket assigned, nothing written) in the last ~2 ms before its instant.
  let ahead: { req: PlannedRequest; body: string } | null = null;
  let prepared: { req: PlannedRequest; body: string; send: PreparedSend } | null = null;
  const bodyFor = (req: PlannedRequest) => {
    if (ahead?.req !== req) return bodyOf(req);
    const body = ahead.body;
    ahead = null;
    return body;
  };
  const prepareNext = () => {
    if (prepared || stopped || next >= requests.length || client.inFlight >= cap) return;
    const req = requests[next];
    const body = bodyFor(req);
    prepared = { req, body, send: client.prepare(outgoing(req, body, 0), onEnd) };
  };
  const tick = () => {
    timer = null;
    if (stopped) return;
    let now = nowNs();
    while (next < requests.length && requests[next].scheduledS * 1e9 <= now) {
      const req = requests[next++];
      const p = prepared?.req === req ? prepared : null;
      prepared = null;
      if (client.inFlight < cap) fire(req, p?.send ?? client.prepare(outgoing(req, bodyFor(req), 0), onEnd));
      else {
        // No slot (one freed before the instant went to a waiting request): it waits, unprepared.
        p?.send.abandon();
        waiting.push({ req, body: p?.body ?? bodyFor(req) });
      }
      now = nowNs();
    }
    if (next < requests.length) {
      if (ahead === null) ahead = { req: requests[next], body: bodyOf(requests[next]) };
      timer = wakeAt(requests[next].scheduledS * 1e9, nowNs, tick, { onNear: prepareNext });
    } else finishIfDone();
  };

  tick();
  return {
    stop(reason) {
      if (stopped) return;
      stopped = true;
      timer?.cancel();
      timer = null;
      prepared?.send.abandon();
      prepared = null;
      waiting.length = 0;
      client.cancelAll(reason);
      finishIfDone();
    },
    limit(n) {
      if (stopped || finished) return;
      requests = [...requests.slice(0, next), ...requests.slice(next).filter((r) => r.index < n)];
      if (prepared && prepared.req.index >= n) {
        prepared.send.abandon();
        prepared = null;
      }
      if (ahead && ahead.req.index >= n) ahead = null;
      // The pending wake-up may be for a dropped request: a tick now re-arms it for the next kept one.
      timer?.cancel();
      tick();
    },
    done,
  };
}
