// One receiving event loop in a worker thread: runs a dispatcher over its share of the plan and
// posts each raw exchange (bytes transferred, not copied) to the decoding worker, so this thread
// only sends and receives. Measures its own event-loop delay and CPU wait so every probe can state its client health.
import { parentPort, type MessagePort } from 'node:worker_threads';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { startDispatch, type Dispatch, type DispatchOptions } from './dispatcher.ts';
import type { PlannedRequest } from './plan.ts';
import type { ToWorker, FromWorker, ReceiverToDecoder } from './workerProtocol.ts';
import { readThreadCpu, threadCpuSince } from './threadCpu.ts';
import { collectGarbageNow, watchGcPauses } from './gcPauses.ts';

const port = parentPort!;
let dispatch: Dispatch | null = null;
const post = (m: FromWorker, transfer?: ArrayBuffer[]) => port.postMessage(m, transfer ?? []);

port.on('message', (m: ToWorker) => {
  if (m.type === 'start') start(m.requests, m.options, m.decoder);
  else if (m.type === 'stop') dispatch?.stop(m.reason);
});

collectGarbageNow();
post({ type: 'ready' });

function start(requests: PlannedRequest[], options: DispatchOptions, decoder: MessagePort): void {
  const toDecoder = (m: ReceiverToDecoder, transfer?: ArrayBuffer[]) => decoder.postMessage(m, transfer ?? []);
  const eld = monitorEventLoopDelay({ resolution: 1 });
  eld.enable();
  const cpuAtStart = readThreadCpu();
  const gc = watchGcPauses(options.client.startNs);
  dispatch = startDispatch(requests, options, {
    onSent: (id) => post({ type: 'sent', id }),
    onEnd: (raw) => toDecoder({ type: 'raw', raw }, [raw.bytes.buffer as ArrayBuffer, raw.readNs.buffer as ArrayBuffer, raw.readEnd.buffer as ArrayBuffer]),
  });
  void dispatch.done.then(({ unsent }) => {
    eld.disable();
    const gcPauses = gc.stop();
    toDecoder({ type: 'done' });
    post({ type: 'finished', unsent, eldP50Ns: eld.percentile(50), eldP99Ns: eld.percentile(99), eldMaxNs: eld.max, cpu: threadCpuSince(cpuAtStart, readThreadCpu()), gcPauses }, [gcPauses.buffer as ArrayBuffer]);
    port.close();
  });
}
