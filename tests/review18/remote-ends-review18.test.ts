/**
 * Review of this stop's remote ends (engine/events/remote-ends.ts, task review18): a failing
 * test for what is wrong, on the event log alone with a store read of our own and the injected
 * clock, as tests/engine/remote-ends.test.ts does.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/engine/clock.ts';
import type { SeppError } from '../../src/engine/errors.ts';
import { EventLog, type LifecycleEvent, RemoteEnds } from '../../src/engine/events/index.ts';
import { defaultEngineLimits } from '../../src/engine/settings.ts';
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

function setUp() {
  const clock = new FakeClock();
  const log = new EventLog(defaultEngineLimits, clock, 'stream');
  const stored = new Map<string, JobEndRow>();
  const view = {
    jobs: {
      *ends(ids: readonly string[]) {
        return ids.flatMap((id) => {
          const found = stored.get(id);
          return found === undefined ? [] : [found];
        });
      },
    },
  } as unknown as StoreView;
  const read = <T>(unit: ReadUnit<T>): Promise<T> => Promise.resolve(unit(view).next().value as T);
  const ends = new RemoteEnds(log, { read, clock, limits: defaultEngineLimits });
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
  return { stored, ends, look, subscribe, log };
}

test('review18: a job told ended once is never asked for again while named, though it runs and ends again', async () => {
  // RemoteEnds.told keeps an id for as long as some subscription names it: an Events stream naming the
  // job (or an outcome wait opened again before the next look) never hears its later ends through
  // another server (a dead letter requeued and then completed). Each end a look reads should be told.
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

test("review18: a stream scoped to its key's queues is not told that another queue's job ended", async () => {
  // RemoteEnds.apply -> EventLog.endWaitsFor ends every subscription naming only the gone job, without
  // the subscription's queueAllowed (a key scoped to queues): a scoped key's Events stream naming the id
  // of another queue's job learns that the job existed and when it ended through another server (the
  // end's message names the job). Its events are held to its queues; so should this end be.
  const { stored, ends, look, subscribe } = setUp();
  const scoped = subscribe(['theirs'], (queue) => queue === 'mine');
  stored.set('theirs', row('theirs', 'ready', { queue: 'other-tenant', attempt: 0 }));
  await look();
  // Another server completes it; its queue keeps no completed jobs.
  stored.delete('theirs');
  await look();
  ends.stop();
  scoped.subscription.close();
  assert.deepEqual(scoped.events, []);
  assert.deepEqual(
    scoped.ended.map((e) => e.message),
    [],
    "nothing about another queue's job reaches a subscription scoped away from it",
  );
});

test('review18: a job this server completes as a look reads is not declared gone through another server', async () => {
  // A look whose read runs after this server's own COMMIT deleted the job (its queue keeps no completed
  // jobs) but before that commit's event is appended (postgres/writer.ts appends after the COMMIT's
  // answer and another await) finds the row gone and ends the wait with NOT_FOUND "ended through another
  // server", though the job ended here and its result is in this server's memory: the wait loses it.
  // Only the first end should reach the wait; here it should be the result, not not_found.
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
