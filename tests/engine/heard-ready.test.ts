/**
 * "Jobs ready" heard from other servers (engine/leases/heard-ready.ts), bounded because on
 * PostgreSQL anyone who can connect may send them: a burst for known queues nobody here
 * waits on wakes nobody and reads nothing; a burst for a waited-on queue wakes its waiters
 * once per turn, for the jobs it adds up to; a burst for queues this server does not know
 * reads the queues one read at a time, at most refreshesPerPoll times between two polls.
 * (Real servers on one schema: tests/store/postgres-servers.test.ts.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { HeardReady, refreshesPerPoll } from '../../src/engine/leases/heard-ready.ts';

function heardReady(o: { known: string[]; waited: string[] }) {
  const woken: [string, number][] = [];
  const grouped: string[] = [];
  let refreshes = 0;
  const known = new Set(o.known);
  let finishRefresh = () => {};
  const ready = new HeardReady(
    {
      waitingOn: (queue) => (o.waited.includes(queue) ? 1 : 0),
      notify: (queue, jobs) => woken.push([queue, jobs]),
    },
    () => {
      refreshes++;
      return new Promise<void>((resolve) => {
        finishRefresh = resolve;
      });
    },
    (queue) => known.has(queue),
    (queue) => grouped.push(queue),
  );
  /** Ends the read under way and lets what follows it run. */
  const refreshed = async () => {
    finishRefresh();
    await turn();
  };
  return { woken, grouped, ready, known, refreshes: () => refreshes, refreshed };
}

const turn = () => new Promise<void>((resolve) => setImmediate(resolve));

test('a burst for known queues nobody waits on wakes nobody and reads nothing; their groups are kept', async () => {
  const r = heardReady({ known: ['mail', 'sms'], waited: [] });
  for (let i = 0; i < 5_000; i++) r.ready.heard(i % 2 === 0 ? 'mail' : 'sms', 1, i === 0);
  await turn();
  assert.equal(r.refreshes(), 0);
  assert.deepEqual(r.woken, []);
  assert.deepEqual(r.grouped, ['mail']);
});

test('a burst for a waited-on queue wakes its waiters once, for the jobs it adds up to', async () => {
  const r = heardReady({ known: ['mail', 'sms'], waited: ['mail', 'sms'] });
  for (let i = 0; i < 5_000; i++) r.ready.heard('mail', 2, false);
  r.ready.heard('sms', 1, false);
  assert.deepEqual(r.woken, [], 'not before the turn ends');
  await turn();
  assert.deepEqual(r.woken, [
    ['mail', 10_000],
    ['sms', 1],
  ]);
  r.ready.heard('mail', 1, false);
  await turn();
  assert.deepEqual(r.woken.at(-1), ['mail', 1], 'the next turn wakes again');
});

test('a queue not known is read once for a burst; the waiters of those heard meanwhile are woken after it', async () => {
  const r = heardReady({ known: [], waited: ['new'] });
  for (let i = 0; i < 1_000; i++) r.ready.heard('new', 1, true);
  assert.equal(r.refreshes(), 1, 'one read at a time');
  assert.deepEqual(r.grouped, [], 'the read learns its groups');
  r.known.add('new');
  await r.refreshed();
  // The first signal asked for the read; the 999 heard during it find the queue it found.
  assert.deepEqual(r.woken, [
    ['new', 1],
    ['new', 999],
  ]);
  assert.equal(r.refreshes(), 1);
  r.ready.heard('new', 1, false);
  await turn();
  assert.equal(r.refreshes(), 1, 'known now: no read');
  assert.deepEqual(r.woken.at(-1), ['new', 1]);
});

test(`a flood of made-up queue names reads the queues at most ${refreshesPerPoll} times between two polls`, async () => {
  const r = heardReady({ known: [], waited: [] });
  for (let round = 0; round < 10; round++) {
    for (let i = 0; i < 5_000; i++) r.ready.heard(`made-up-${round}-${i}`, 1, true);
    await r.refreshed();
  }
  assert.equal(r.refreshes(), refreshesPerPoll);
  assert.deepEqual(r.grouped, [], 'a made-up name is never remembered as grouped');
  r.ready.polled();
  r.ready.heard('made-up-again', 1, false);
  assert.equal(r.refreshes(), refreshesPerPoll + 1, 'after a poll, reads again');
  r.ready.stop();
});

test('queues other servers make, one after another without a poll between: each is learned at once', async () => {
  // tests/store/postgres-batch-death.test.ts (FakeClock: no poll ever) met six new queues on
  // one server; the fifth waited for a poll that never came.
  const r = heardReady({ known: [], waited: [] });
  for (let n = 0; n < refreshesPerPoll * 3; n++) {
    r.ready.heard(`made-${n}`, 1, false);
    assert.equal(r.refreshes(), n + 1, `queue ${n} is read for`);
    r.known.add(`made-${n}`);
    await r.refreshed();
  }
  r.ready.stop();
});

test('a read that finds its queue gives back its own read only: the flood before it stays spent', async () => {
  const r = heardReady({ known: [], waited: [] });
  // One made-up name a read (names heard during a read would ask for the next one at once).
  const flood = async (round: string) => {
    r.ready.heard(`made-up-${round}`, 1, false);
    await r.refreshed();
  };
  for (let round = 0; round < refreshesPerPoll - 1; round++) await flood(`${round}`);
  r.ready.heard('made', 1, false);
  r.known.add('made');
  await r.refreshed();
  assert.equal(r.refreshes(), refreshesPerPoll, 'the genuine read is read for');
  for (let round = 0; round < 5; round++) await flood(`after-${round}`);
  assert.equal(
    r.refreshes(),
    refreshesPerPoll + 1,
    `${refreshesPerPoll} reads that found nothing, then none`,
  );
  r.ready.stop();
});
