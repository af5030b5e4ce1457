/**
 * Ends other servers committed, read from a shared store for the subscriptions that name
 * jobs (engine/events/remote-ends.ts), on the event log alone with a store read of our own:
 * the looks come every 250 ms of the injected clock only while jobs are named, ask for at most
 * limits.max_waiters ids in turns, never again for an end already told; an end read becomes
 * the event only the subscriptions naming the job see; a job seen and then gone ends the
 * subscriptions naming it alone with not_found. (With two servers on PostgreSQL:
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
  const subscribe = (jobIds: string[]) => {
    const events: LifecycleEvent[] = [];
    const ended: SeppError[] = [];
    const subscription = log.subscribe(
      { queues: [], jobIds, kinds: [] },
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
  assert.deepEqual(asked, [['a'], ['a']], 'an end told is not asked for again');
  waiting.subscription.close();
  all.subscription.close();
  const asks = asked.length;
  await look();
  await look();
  assert.equal(asked.length, asks, 'the looks stop with the last subscription naming a job');
  ends.stop();
});

test('a job seen and then gone ends the subscriptions naming it alone with not_found; one never seen is asked again', async () => {
  const { stored, asked, look, subscribe, ends } = setUp();
  const alone = subscribe(['a']);
  const several = subscribe(['a', 'b']);
  const batchId = subscribe(['batch-1']);
  // A read of the server's own (GetJob) saw it not ended: the first look already finds it gone.
  ends.saw({ id: 'a', state: 'ready' } as JobInfo);
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
  assert.deepEqual(asked.at(-1), ['b', 'batch-1']);
  await look();
  assert.deepEqual(asked.at(-1), ['batch-1'], 'ends told are asked no more; the unseen id still is');
  several.subscription.close();
  batchId.subscription.close();
  ends.stop();
});

test('an end this server committed is not read again; more named jobs than limits.max_waiters are asked in turns', async () => {
  const { log, asked, look, subscribe, ends } = setUp(2);
  const waits = ['a', 'b', 'c'].map((id) => subscribe([id]));
  log.append({
    sequence: 0,
    atMs: 1,
    jobId: 'c',
    queue: 'q',
    type: 't',
    attempt: 1,
    kind: 'cancelled',
    previousState: 'ready',
  });
  await look();
  await look();
  assert.deepEqual(asked, [
    ['a', 'b'],
    ['a', 'b'],
  ]);
  const four = subscribe(['d']);
  await look();
  await look();
  assert.deepEqual(asked.slice(2), [
    ['a', 'b'],
    ['d', 'a'],
  ]);
  for (const w of [...waits, four]) w.subscription.close();
  ends.stop();
});
