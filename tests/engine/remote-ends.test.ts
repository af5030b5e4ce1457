/**
 * Ends other servers committed, read from a shared store for the subscriptions that name
 * jobs (engine/events/remote-ends.ts), on the event log alone with a store read of our own:
 * the looks come every 250 ms of the injected clock only while jobs are named, ask for at most
 * limits.max_waiters ids in turns; each end read becomes, once, the event only the
 * subscriptions naming the job see, and a later end of the same job (a dead letter requeued)
 * too; a job seen and then gone on two looks ends the subscriptions naming it alone, and
 * admitting its queue, with not_found. (With two servers on PostgreSQL:
 * tests/store/postgres-servers.test.ts.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/engine/clock.ts';
import type { SeppError } from '../../src/engine/errors.ts';
import { EventLog, type LifecycleEvent, RemoteEnds } from '../../src/engine/events/index.ts';
import { defaultEngineLimits, type EngineLimits } from '../../src/engine/settings.ts';
import type { JobInfo } from '../../src/engine/types.ts';
import type { JobEndRow } from '../../src/store/rows.ts';
import type { ReadUnit, StoreView } from '../../src/store/store.ts';

const row = (id: string, state: string, extra: Partial<JobEndRow> = {}): JobEndRow => ({
  id,
  queue: 'q',
  type: 't',
  state,
  attempt: 1,
  result: null,
  result_content_type: null,
  last_error: null,
  dead_reason: null,
  completed_at_ms: null,
  failed_at_ms: null,
  cancelled_at_ms: null,
  ...extra,
});

function setUp(maxWaiters = 10_000) {
  const limits: EngineLimits = { ...defaultEngineLimits, maxWaiters };
  const clock = new FakeClock();
  const log = new EventLog(limits, clock, 'stream');
  /** The store's rows by id, and the ids each look asked for. */
  const stored = new Map<string, JobEndRow>();
  const asked: string[][] = [];
  const view = {
    jobs: {
      *ends(ids: readonly string[]) {
        asked.push([...ids]);
        return ids.flatMap((id) => {
          const found = stored.get(id);
          return found === undefined ? [] : [found];
        });
      },
    },
  } as unknown as StoreView;
  const read = <T>(unit: ReadUnit<T>): Promise<T> => Promise.resolve(unit(view).next().value as T);
  const ends = new RemoteEnds(log, { read, clock, limits });
  /** Moves the clock to the next look and lets its read come back. */
  const look = async () => {
    clock.advance(250);
    for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
  };
  const subscribe = (jobIds: string[], queueAllowed?: (queue: string) => boolean) => {
    const events: LifecycleEvent[] = [];
    const ended: SeppError[] = [];
    const subscription = log.subscribe(
      { queues: [], jobIds, kinds: [], ...(queueAllowed === undefined ? {} : { queueAllowed }) },
      { kind: 'now' },
      {
        send: (batch, written) => {
          events.push(...batch);
          written();
        },
        caughtUp: () => {},
        end: (error) => ended.push(error),
      },
    );
    return { events, ended, subscription };
  };
  return { clock, log, stored, asked, ends, look, subscribe };
}

test('no look while nothing is named; an end read is the event for the subscriptions naming the job only', async () => {
  const { clock, stored, asked, look, subscribe, ends } = setUp();
  const all = subscribe([]);
  await look();
  assert.equal(clock.pendingTimers, 0, 'no timer while no subscription names a job');
  assert.deepEqual(asked, []);
  const waiting = subscribe(['a']);
  stored.set('a', row('a', 'leased'));
  await look();
  assert.deepEqual(asked, [['a']]);
  assert.equal(waiting.events.length, 0, 'not ended yet');
  stored.set(
    'a',
    row('a', 'completed', {
      result: Buffer.from('{"n":1}'),
      result_content_type: 'application/json',
      completed_at_ms: 7,
    }),
  );
  await look();
  assert.deepEqual(
    waiting.events.map((e) => [
      e.kind,
      e.jobId,
      e.atMs,
      e.kind === 'completed' && Buffer.from(e.result!).toString(),
    ]),
    [['completed', 'a', 7, '{"n":1}']],
  );
  assert.deepEqual(all.events, [], 'a subscription naming no job sees only its own server’s commits');
  await look();
  assert.deepEqual(asked, [['a'], ['a'], ['a']], 'a job stays asked for while named: it may end again');
  assert.equal(waiting.events.length, 1, 'an end told is not told again');
  waiting.subscription.close();
  all.subscription.close();
  const asks = asked.length;
  await look();
  await look();
  assert.equal(asked.length, asks, 'the looks stop with the last subscription naming a job');
  ends.stop();
});

test('a job seen and then gone on two looks ends the subscriptions naming it alone with not_found; one never seen is asked again', async () => {
  const { stored, asked, look, subscribe, ends } = setUp();
  const alone = subscribe(['a']);
  const several = subscribe(['a', 'b']);
  const batchId = subscribe(['batch-1']);
  // A read of the server's own (GetJob) saw it not ended: the first look already finds it gone.
  ends.saw({ id: 'a', queue: 'q', state: 'ready' } as JobInfo);
  await look();
  assert.equal(alone.ended.length, 0, 'one look may have read between a commit here and its event');
  await look();
  assert.equal(alone.ended.length, 1);
  assert.equal(alone.ended[0]?.code, 'not_found');
  assert.match(alone.ended[0]!.message, /job a ended through another server/);
  assert.equal(several.ended.length, 0, 'a subscription naming other jobs too goes on');
  assert.equal(batchId.ended.length, 0, 'an id never seen as a job is not taken for one gone');
  stored.set(
    'b',
    row('b', 'dead', { last_error: 'boom', dead_reason: 'attempts_exhausted', failed_at_ms: 9 }),
  );
  await look();
  assert.deepEqual(
    several.events.map((e) => [e.kind, e.jobId, e.kind === 'dead_lettered' && [e.error, e.reason]]),
    [['dead_lettered', 'b', ['boom', 'attempts_exhausted']]],
  );
  assert.deepEqual(asked.at(-1), ['b', 'batch-1'], 'a job declared gone is asked no more');
  await look();
  assert.equal(several.events.length, 1, 'an end is told once');
  // Its queue's dead_retention_ms passes: gone after its end was told is no new end.
  stored.delete('b');
  await look();
  await look();
  assert.deepEqual(
    asked.at(-1),
    ['batch-1'],
    'a job gone after its end is asked no more; the unseen id still is',
  );
  assert.equal(several.ended.length, 0);
  several.subscription.close();
  batchId.subscription.close();
  ends.stop();
});

test('an end this server committed is not told again when read; more named jobs than limits.max_waiters are asked in turns', async () => {
  const { log, stored, asked, look, subscribe, ends } = setUp(2);
  const waits = ['a', 'b', 'c'].map((id) => subscribe([id]));
  log.append({
    sequence: 0,
    atMs: 5,
    jobId: 'c',
    queue: 'q',
    type: 't',
    attempt: 1,
    kind: 'cancelled',
    previousState: 'ready',
  });
  stored.set('c', row('c', 'cancelled', { cancelled_at_ms: 5 }));
  await look();
  await look();
  assert.deepEqual(asked, [
    ['a', 'b'],
    ['c', 'a'],
  ]);
  assert.deepEqual(
    waits[2]!.events.map((e) => [e.kind, e.fromStore]),
    [['cancelled', undefined]],
    'the row read after the commit here is that same end',
  );
  const four = subscribe(['d']);
  await look();
  await look();
  assert.deepEqual(asked.slice(2), [
    ['a', 'b'],
    ['c', 'd'],
  ]);
  for (const w of [...waits, four]) w.subscription.close();
  ends.stop();
});

test('a job that ends again (a dead letter requeued, then completed elsewhere) is told each end', async () => {
  // An Events stream naming the job stays open past its first end: each later end through
  // another server reaches it too, once (review18).
  const { stored, ends, look, subscribe } = setUp();
  const stream = subscribe(['j1']);
  stored.set('j1', row('j1', 'dead', { last_error: 'boom', dead_reason: 'max_attempts', failed_at_ms: 1 }));
  await look();
  assert.deepEqual(
    stream.events.map((e) => e.kind),
    ['dead_lettered'],
  );
  // Another server requeues the dead letter; it runs there and completes.
  stored.set('j1', row('j1', 'ready', { attempt: 0 }));
  await look();
  stored.set('j1', row('j1', 'completed', { attempt: 1, completed_at_ms: 2 }));
  await look();
  await look();
  ends.stop();
  stream.subscription.close();
  assert.deepEqual(
    stream.events.map((e) => e.kind),
    ['dead_lettered', 'completed'],
    'the second end, committed through another server, reached the stream naming the job',
  );
});

test('an end repeated elsewhere in the same state and attempt within a look is told, after one read or committed here', async () => {
  // A dead letter requeued and dead-lettered again through another server, without a lease,
  // before the next look: the same state and attempt, a later row (multi19).
  const { log, stored, ends, look, subscribe } = setUp();
  const read = subscribe(['r']);
  const dead = { last_error: 'boom', dead_reason: 'dead_lettered' };
  stored.set('r', row('r', 'dead', { ...dead, failed_at_ms: 7, version: '100' }));
  await look();
  // The same millisecond: only the row's version tells the two ends apart.
  stored.set('r', row('r', 'dead', { ...dead, failed_at_ms: 7, version: '104' }));
  await look();
  await look();

  const committed = subscribe(['c']);
  log.append({
    sequence: 0,
    atMs: 10,
    jobId: 'c',
    queue: 'q',
    type: 't',
    attempt: 1,
    kind: 'dead_lettered',
    reason: 'dead_lettered',
    error: 'boom',
  });
  stored.set('c', row('c', 'dead', { ...dead, failed_at_ms: 12, version: '210' }));
  await look();
  await look();
  ends.stop();
  for (const s of [read, committed]) s.subscription.close();
  assert.deepEqual(
    read.events.map((e) => [e.kind, e.fromStore]),
    [
      ['dead_lettered', true],
      ['dead_lettered', true],
    ],
    'each version of the end read is told once',
  );
  assert.deepEqual(
    committed.events.map((e) => [e.kind, e.fromStore, e.atMs]),
    [
      ['dead_lettered', undefined, 10],
      ['dead_lettered', true, 12],
    ],
    'the end committed here, then the one made elsewhere after it (it ended later)',
  );
});

test("a subscription its queues or key keep from a job's queue is not told that job ended elsewhere", async () => {
  // A key scoped to queues may name another queue's job: its events never reach the key, and
  // neither may the not_found saying it ended elsewhere (review18).
  const { stored, ends, look, subscribe } = setUp();
  const scoped = subscribe(['theirs'], (queue) => queue === 'mine');
  const open = subscribe(['theirs']);
  stored.set('theirs', row('theirs', 'ready', { queue: 'other-tenant', attempt: 0 }));
  await look();
  // Another server completes it; its queue keeps no completed jobs.
  stored.delete('theirs');
  await look();
  await look();
  ends.stop();
  scoped.subscription.close();
  assert.deepEqual(
    open.ended.map((e) => e.code),
    ['not_found'],
    'a subscription its scope admits is told',
  );
  assert.deepEqual(scoped.events, []);
  assert.deepEqual(
    scoped.ended.map((e) => e.message),
    [],
    "nothing about another queue's job reaches a subscription scoped away from it",
  );
});

test('a job this server completes as a look reads is not declared gone through another server', async () => {
  // A look may read after this server's own COMMIT deleted the job (its queue keeps no completed
  // jobs) but before that commit's event is appended (postgres/writer.ts appends once the COMMIT
  // has answered): gone on one look is not yet gone, and the event that follows is the wait's end
  // (review18).
  const { stored, ends, look, subscribe, log } = setUp();
  const wait = subscribe(['mine']);
  stored.set('mine', row('mine', 'leased', { attempt: 1 }));
  await look();
  // This server's ack of the job commits: its row is deleted, and the look reads before the event.
  stored.delete('mine');
  await look();
  log.append({
    sequence: 0,
    atMs: 1,
    jobId: 'mine',
    queue: 'q',
    type: 't',
    attempt: 1,
    kind: 'completed',
    result: Buffer.from('42'),
    resultContentType: 'application/json',
    retained: false,
  } as LifecycleEvent);
  await look();
  await look();
  ends.stop();
  wait.subscription.close();
  assert.deepEqual(
    wait.ended.map((e) => e.code),
    [],
    'the wait was not ended with not_found for a job this server itself completed',
  );
  assert.deepEqual(
    wait.events.map((e) => e.kind),
    ['completed'],
  );
});
