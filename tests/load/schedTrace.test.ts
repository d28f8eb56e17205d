// schedTrace.ts: sched_switch lines become per-CPU run intervals, and a tail burst's window is
// split between the receiving thread, the client's other threads, the engine, other processes and
// idle CPUs. A hand-written trace with known answers.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { attributeTail, busiestThreads, parseSavedTgids, parseSchedSwitch, receiverStates, tailWaits } from '../../harness/load/schedTrace.ts';

// CPU 1: idle, then the receiver (tid 101) 10.000-10.003, a V8 helper of the client (102)
// 10.003-10.005, the receiver again to 10.006, idle. CPU 0: the engine (201) throughout, with
// kdamond (77) taking 10.001-10.002. Record-tgid output puts the process id in parentheses.
const TRACE = `# tracer: nop
          <idle>-0       (-------) [001] d..2. 9.990000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       (-------) [001] d..2. 10.000000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=node next_pid=101 next_prio=120
            node-101     (    100) [001] d..2. 10.003000: sched_switch: prev_comm=node prev_pid=101 prev_prio=120 prev_state=R+ ==> next_comm=node next_pid=102 next_prio=139
            node-102     (    100) [001] d..2. 10.005000: sched_switch: prev_comm=node prev_pid=102 prev_prio=139 prev_state=S ==> next_comm=node next_pid=101 next_prio=120
            node-101     (    100) [001] d..2. 10.006000: sched_switch: prev_comm=node prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
          <idle>-0       (-------) [001] d..2. 10.020000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=swapper/1 next_pid=0 next_prio=120
            node-201     (    200) [000] d..2. 9.990000: sched_switch: prev_comm=node prev_pid=201 prev_prio=120 prev_state=R ==> next_comm=node next_pid=201 next_prio=120
            node-201     (    200) [000] d..2. 10.001000: sched_switch: prev_comm=node prev_pid=201 prev_prio=120 prev_state=R+ ==> next_comm=kdamond.0 next_pid=77 next_prio=120
       kdamond.0-77      (     77) [000] d..2. 10.002000: sched_switch: prev_comm=kdamond.0 prev_pid=77 prev_prio=120 prev_state=S ==> next_comm=node next_pid=201 next_prio=120
            node-201     (    200) [000] d..2. 10.020000: sched_switch: prev_comm=node prev_pid=201 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
          <idle>-0       (-------) [001] dNh2. 10.000500: sched_wakeup: comm=node pid=101 prio=120 target_cpu=001
`;
const tgids = parseSavedTgids('101 100\n102 100\n201 200\n77 77\n');
const roleOf = (tid: number) => (tid === 101 ? 'receiver' : tgids.get(tid) === 100 ? 'client' : tgids.get(tid) === 200 ? 'engine' : 'other') as 'receiver' | 'client' | 'engine' | 'other';
const close = (a: number, b: number) => Math.abs(a - b) < 1e-9;

test('sched_switch lines become run intervals per CPU; other events are ignored', () => {
  const iv = parseSchedSwitch(TRACE);
  assert.equal([...iv.keys()].sort(), [0, 1]);
  const cpu1 = iv.get(1)!;
  assert.is(cpu1.length, 5);
  assert.equal(cpu1[2], { startS: 10.003, endS: 10.005, tid: 102, comm: 'node' });
  assert.equal(iv.get(0)![1], { startS: 10.001, endS: 10.002, tid: 77, comm: 'kdamond.0' });
});

test('a tail burst is split between the receiver, the client, the engine, other processes and idle', () => {
  const intervals = parseSchedSwitch(TRACE);
  // Burst A: 3 chunks stamped at 9.9995, received 10.001-10.006 (slow). Burst B: 3 chunks stamped
  // at 10.010, received 0.2 ms later (fast). A single late chunk at 10.0155 (one chunk: ignored).
  const emitS = [9.9995, 9.9995, 9.9995, 10.01, 10.01, 10.01, 10.0155];
  const recvS = [10.001, 10.004, 10.006, 10.0102, 10.0102, 10.0102, 10.019];
  const t = attributeTail({ intervals, recvS, emitS, thresholdS: 0.002, minChunks: 2, roleOf });
  assert.is(t.bursts.length, 1);
  const b = t.bursts[0];
  assert.is(b.chunks, 3);
  assert.ok(close(b.medianRecvMinusEmitS, 0.0045), String(b.medianRecvMinusEmitS));
  // Window 9.9995-10.006 on both CPUs: CPU 1 idle 0.5 ms, receiver 3 + 1 ms, helper 2 ms; CPU 0
  // engine 1.5 + 4 ms, kdamond 1 ms.
  assert.ok(close(b.byRole.receiver, 0.004), `receiver ${b.byRole.receiver}`);
  assert.ok(close(b.byRole.client, 0.002), `client ${b.byRole.client}`);
  assert.ok(close(b.byRole.engine, 0.0055), `engine ${b.byRole.engine}`);
  assert.ok(close(b.byRole.other, 0.001), `other ${b.byRole.other}`);
  assert.ok(close(b.byRole.idle, 0.0005), `idle ${b.byRole.idle}`);
  assert.ok(close(t.others['kdamond.0'], 0.001));
  assert.equal(t.total, b.byRole);
  assert.equal(Object.keys(t.clientThreads).map(Number), [102]);
  assert.ok(close(t.clientThreads[102], 0.002));
});

test("each tail chunk's wait is split by what the receiver was doing, and who held its CPU", () => {
  const intervals = parseSchedSwitch(TRACE);
  const states = receiverStates(TRACE, 101);
  // Runs 10.000-10.003 (the wake-up line at 10.0005, while it runs, changes nothing), preempted by
  // the helper (runnable 10.003-10.005), runs to 10.006, then sleeps.
  assert.equal(states.map((s) => s.state), ['running', 'runnable', 'running', 'sleeping']);
  // Chunk 1, emitted 9.9995 and received 10.0055: asleep 0.5 ms (nothing known before 10.000),
  // running 3 + 0.5 ms, runnable 2 ms with the client's helper on its CPU. Chunk 2 is below the cut.
  const w = tailWaits({ states, intervals, recvS: [10.0055, 10.0004], emitS: [9.9995, 10.0002], quantile: 0.5, roleOf });
  assert.is(w.chunks, 1);
  const total = 0.006;
  assert.ok(close(w.byState.sleeping, 0.0005 / total), `sleeping ${w.byState.sleeping}`);
  assert.ok(close(w.byState.running, 0.0035 / total), `running ${w.byState.running}`);
  assert.ok(close(w.byState.runnable, 0.002 / total), `runnable ${w.byState.runnable}`);
  assert.is(w.byState.blocked, 0);
  assert.ok(close(w.runnableHeldBy.client, 1), JSON.stringify(w.runnableHeldBy));
});

test('a receiver blocked in a system call counts as blocked; woken on an idle CPU, the wait is the idle CPU', () => {
  const trace = `
            node-101     (    100) [001] d..2. 20.000000: sched_switch: prev_comm=node prev_pid=101 prev_prio=120 prev_state=D ==> next_comm=swapper/1 next_pid=0 next_prio=120
     rcu_preempt-15      (     15) [001] d..4. 20.004000: sched_wakeup: comm=node pid=101 prio=120 target_cpu=001
          <idle>-0       (-------) [001] d..2. 20.005000: sched_switch: prev_comm=swapper/1 prev_pid=0 prev_prio=120 prev_state=R ==> next_comm=node next_pid=101 next_prio=120
            node-101     (    100) [001] d..2. 20.006000: sched_switch: prev_comm=node prev_pid=101 prev_prio=120 prev_state=S ==> next_comm=swapper/1 next_pid=0 next_prio=120
`;
  const w = tailWaits({ states: receiverStates(trace, 101), intervals: parseSchedSwitch(trace), recvS: [20.0055], emitS: [20.0015], quantile: 0, roleOf });
  // 20.0015-20.004 blocked, 20.004-20.005 runnable on an idle CPU, 20.005-20.0055 running.
  assert.ok(close(w.byState.blocked, 0.0025 / 0.004), `blocked ${w.byState.blocked}`);
  assert.ok(close(w.byState.runnable, 0.001 / 0.004), `runnable ${w.byState.runnable}`);
  assert.ok(close(w.byState.running, 0.0005 / 0.004), `running ${w.byState.running}`);
  assert.ok(close(w.runnableHeldBy.idle, 1), JSON.stringify(w.runnableHeldBy));
});

test('the busiest thread of our own process in a window is the receiver', () => {
  const intervals = parseSchedSwitch(TRACE);
  assert.equal(busiestThreads(intervals, (tid) => tgids.get(tid), 100, 1, 9.99, 10.02), [101]);
  assert.equal(busiestThreads(intervals, (tid) => tgids.get(tid), 100, 2, 10.003, 10.005), [102]);
});

test.run();
