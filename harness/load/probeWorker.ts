// One receiving event loop in a worker thread: runs a dispatcher over its share of the plan and
// posts each raw exchange (bytes transferred, not copied) to the decoding worker, so this thread
// only sends and receives. Before it says it is ready, it runs its receive path once against a
// loopback engine (warmUp.ts) and collects its garbage. Measures its own event-loop delay and CPU
// wait so every probe can state its client health.
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startDispatch, type Dispatch, type DispatchOptions } from './dispatcher.ts';
import type { PlannedRequest } from './plan.ts';
import type { ToWorker, FromWorker, ReceiverToDecoder } from './workerProtocol.ts';
import type { RawExchange } from './exchange.ts';
import { readThreadCpu, threadCpuSince } from './threadCpu.ts';
import { collectGarbageNow, watchGcPauses } from './gcPauses.ts';
import { warmReceivePath, type WarmUpOptions } from './warmUp.ts';
import { currentThreadId } from './threadPriority.ts';

const port = parentPort!;
let dispatch: Dispatch | null = null;
const post = (m: FromWorker, transfer?: ArrayBuffer[]) => port.postMessage(m, transfer ?? []);

port.on('message', (m: ToWorker) => {
  if (m.type === 'start') start(m.requests, m.options, m.decoder);
  else if (m.type === 'stop') dispatch?.stop(m.reason);
  else if (m.type === 'limit') dispatch?.limit(m.planned);
});

const warmUp = (workerData as { warmUp?: WarmUpOptions } | undefined)?.warmUp;
// A full collection before the warm-up; after it only a young-generation one, since a full
// collection would discard the code the warm-up compiled, and its garbage would otherwise fill the
// probe's young generation.
collectGarbageNow('major');
if (warmUp) {
  try {
    await warmReceivePath(warmUp);
  } catch {
    // No loopback listener here, say: the probe only starts colder.
  }
  collectGarbageNow('minor');
}
post({ type: 'ready', threadId: currentThreadId() });

function start(requests: PlannedRequest[], options: DispatchOptions, decoder: MessagePort): void {
  const toDecoder = (m: ReceiverToDecoder, transfer?: ArrayBuffer[]) => decoder.postMessage(m, transfer ?? []);
  const eld = monitorEventLoopDelay({ resolution: 1 });
  eld.enable();
  const cpuAtStart = readThreadCpu();
  const gc = watchGcPauses(options.client.startNs);
  let ended: RawExchange[] = [];
  const handOver = () => {
    const raws = ended;
    ended = [];
    toDecoder({ type: 'raw', raws }, raws.flatMap((raw) => [raw.bytes.buffer as ArrayBuffer, raw.readNs.buffer as ArrayBuffer, raw.readEnd.buffer as ArrayBuffer]));
  };
  dispatch = startDispatch(requests, options, {
    onSent: (id) => post({ type: 'sent', id }),
    onEnd: (raw) => {
      // Handed over once this turn's reads are all stamped: a burst of requests ending together
      // then costs the reads behind them no hand-off each.
      if (ended.length === 0) setImmediate(handOver);
      ended.push(raw);
    },
  });
  void dispatch.done.then(({ unsent }) => {
    eld.disable();
    const gcPauses = gc.stop();
    if (ended.length > 0) handOver();
    toDecoder({ type: 'done' });
    post({ type: 'finished', unsent, eldP50Ns: eld.percentile(50), eldP99Ns: eld.percentile(99), eldMaxNs: eld.max, cpu: threadCpuSince(cpuAtStart, readThreadCpu()), gcPauses }, [gcPauses.buffer as ArrayBuffer]);
    port.close();
  });
}
