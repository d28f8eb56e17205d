// The decoding thread of a probe: receiving workers hand it each raw exchange as it ends (through
// a port of their own), it decodes them (SSE, JSON, token counts) and posts the records to the
// main thread, which writes them. While the probe runs it yields the CPU to the receiving threads
// (threadPriority.ts, set from the main thread), so a decode never delays a read.
import { parentPort } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { decodeExchange } from './decode.ts';
import type { FromDecoder, ToDecoder, ReceiverToDecoder } from './workerProtocol.ts';

const port = parentPort!;
const post = (m: FromDecoder, transfer?: ArrayBuffer[]) => port.postMessage(m, transfer ?? []);
let startNs = 0n;
let open = 0;

port.on('message', (m: ToDecoder) => {
  if (m.type === 'start') {
    startNs = m.startNs;
    open = m.receivers.length;
    if (open === 0) post({ type: 'drained' });
    for (const r of m.receivers) listen(r);
  }
});

post({ type: 'ready' });

function listen(receiver: MessagePort): void {
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    receiver.close();
    if (--open === 0) post({ type: 'drained' });
  };
  receiver.on('message', (m: ReceiverToDecoder) => {
    if (m.type === 'done') return end();
    for (const raw of m.raws) {
      const { record, recvMinusEmitNs, recvNs } = decodeExchange(raw, startNs);
      const rme = Float64Array.from(recvMinusEmitNs);
      const recv = Float64Array.from(recvNs);
      const lagNs = raw.sentNs === null ? null : raw.sentNs - raw.scheduledNs - raw.slotWaitNs;
      post({ type: 'decoded', index: raw.index, record, lagNs, recvMinusEmitNs: rme, recvNs: recv }, [rme.buffer, recv.buffer]);
    }
  });
  // A receiving worker that died closes its end: what it never handed over is not waited for.
  receiver.on('close', end);
}
