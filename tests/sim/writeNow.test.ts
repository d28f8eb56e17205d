// The simulated engine stamps each streamed chunk with fluidcap_emit_ns "at the moment it is
// written": writeNow hands the chunk to the kernel before it returns, where node:http's own write
// leaves it corked in the socket until the next tick (after the whole engine step). Checked on a
// real server and socket, by what is still buffered in the socket when the call returns.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeNow } from '../../harness/sim/server.ts';

/** Streams two chunks on one response (once with res.write, once with writeNow) and reports the bytes left buffered after each call. */
async function bufferedAfterWrite(write: (res: ServerResponse, chunk: string) => void): Promise<number[]> {
  const left: number[] = [];
  const server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.flushHeaders();
    setTimeout(() => {
      for (const chunk of ['data: one\n\n', 'data: two\n\n']) {
        write(res, chunk);
        left.push(res.socket!.writableLength);
      }
      res.end('data: [DONE]\n\n');
    }, 20);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/', method: 'POST' }, (res) => {
      res.resume();
      res.on('end', resolve);
    })
      .on('error', reject)
      .end();
  });
  await new Promise<void>((r) => server.close(() => r()));
  return left;
}

test("node:http's write leaves a streamed chunk corked until the next tick (what writeNow is for)", async () => {
  const left = await bufferedAfterWrite((res, chunk) => res.write(chunk));
  assert.ok(left.every((n) => n > 0), `buffered after res.write: ${left}`);
});

test('writeNow hands each chunk to the socket before it returns', async () => {
  const left = await bufferedAfterWrite(writeNow);
  assert.equal(left, [0, 0]);
});

test.run();
