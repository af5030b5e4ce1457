/** The admin's small parts on their own: rate history, payload view, passwords, sessions. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hashPassword, parsePasswordHash, verifyPassword } from '../../src/admin/password.ts';
import { hexDump, maxViewBytes, viewPayload } from '../../src/admin/payload-view.ts';
import { RateHistory } from '../../src/admin/rate-history.ts';
import { SessionStore } from '../../src/admin/sessions.ts';
import { FakeClock } from '../../src/engine/clock.ts';
import { testScrypt } from '../helpers/admin.ts';

test('RateHistory: finished buckets over the window, current rates over the time covered, per queue, with waits', () => {
  const clock = new FakeClock(Date.UTC(2026, 0, 1));
  const rates = new RateHistory(clock);
  rates.record({ kind: 'enqueued', queue: 'q', count: 5 });
  rates.record({ kind: 'dead_lettered', queue: 'q', reason: 'lease_expired', count: 1 });
  rates.record({ kind: 'cancelled', queue: 'q', count: 9 });
  clock.advance(10_000);
  rates.record({ kind: 'acked', queue: 'q', count: 2 });
  rates.record({ kind: 'reserved', queue: 'r', count: 4, totalWaitMs: 2000, maxWaitMs: 1500 });
  clock.advance(5_000);
  let snap = rates.snapshot();
  assert.equal(snap.series.enqueued.length, 360);
  assert.deepEqual(snap.series.enqueued.slice(-2), [null, 5], 'the bucket in progress is not in the series');
  assert.equal(snap.series.acked.at(-1), 0, 'the ack is in the bucket in progress');
  assert.equal(snap.series.dead.at(-1), 1);
  assert.equal(snap.startMs + 360 * 10_000, Math.floor(clock.nowMs() / 10_000) * 10_000);
  // 15 s since the start: the rates divide by that, not by the hour, and say so.
  assert.equal(snap.coveredMs, 15_000);
  assert.equal(snap.coveredFromMs, Date.UTC(2026, 0, 1));
  // Buckets that ended before the start are no data (null), not zeros.
  assert.equal(snap.series.enqueued.filter((n) => n === null).length, 359);
  assert.equal(snap.current.perSecond.enqueued, 5 / 15);
  assert.equal(snap.queues.q?.perSecond.acked, 2 / 15);
  assert.equal(snap.queues.r?.avgWaitMs, 500);
  assert.equal(snap.queues.r?.maxWaitMs, 1500);
  assert.equal(snap.queues.q?.avgWaitMs, null, 'nothing leased from q');
  const five = rates.snapshot('5m');
  assert.equal(five.series.enqueued.length, 30);
  assert.equal(five.bucketMs, 10_000);
  const day = rates.snapshot('24h');
  assert.equal(day.series.enqueued.length, 288);
  assert.equal(day.bucketMs, 5 * 60_000);
  clock.advance(60 * 60_000);
  snap = rates.snapshot();
  assert.equal(
    snap.series.enqueued.reduce<number>((a, b) => a + (b ?? 0), 0),
    0,
    'an hour later the first events are out of the hour',
  );
  assert.equal(snap.current.perSecond.enqueued, 0);
  assert.equal(rates.snapshot('24h').current.perSecond.enqueued > 0, true, 'but still in the day');
  rates.record({ kind: 'enqueued', queue: 'q', count: 1 });
  clock.advance(10_000);
  snap = rates.snapshot();
  assert.equal(snap.series.enqueued.at(-1), 1, 'a reused slot starts from zero');
  assert.equal(snap.totals.enqueued, 6);
});

test('payloads are shown as JSON, text or hex, capped at 64 KiB', () => {
  assert.deepEqual(viewPayload(Buffer.from('{"a":[1,2]}'), 'application/json'), {
    view: 'json',
    text: '{\n  "a": [\n    1,\n    2\n  ]\n}',
    bytes: 11,
    truncated: false,
  });
  assert.equal(viewPayload(Buffer.from('{"a":'), 'application/vnd.x+json').view, 'text');
  assert.equal(viewPayload(Buffer.from('héllo'), 'text/plain; charset=utf-8').text, 'héllo');
  assert.equal(viewPayload(Buffer.from([0xc3, 0x28]), 'text/plain').view, 'hex');
  assert.equal(viewPayload(Buffer.from('plain'), 'application/octet-stream').view, 'hex');
  const big = viewPayload(Buffer.alloc(maxViewBytes + 10, 0x61), 'text/plain');
  assert.equal(big.truncated, true);
  assert.equal(big.text.length, maxViewBytes);
  assert.equal(big.bytes, maxViewBytes + 10);
  assert.equal(hexDump(Buffer.from('ABCDEFGHIJKLMNOPQ')).split('\n')[1], `00000010  ${'51'.padEnd(47)}  Q`);
});

test('passwords: PHC scrypt hashes that verify, in the format sepp.toml stores', async () => {
  const hash = await hashPassword('s3cret', testScrypt);
  assert.match(hash, /^\$scrypt\$ln=10,r=1,p=1\$[A-Za-z0-9+/]{22}\$[A-Za-z0-9+/]{86}$/);
  assert.equal(await verifyPassword('s3cret', hash), true);
  assert.equal(await verifyPassword('s3cret ', hash), false);
  assert.notEqual(await hashPassword('s3cret', testScrypt), hash, 'a fresh salt each time');
  for (const broken of [
    '',
    's3cret',
    `$scrypt$ln=99,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA$${'A'.repeat(86)}`,
    hash.slice(0, -50),
  ]) {
    assert.equal(parsePasswordHash(broken), null);
    assert.equal(await verifyPassword('s3cret', broken), false);
  }
  await assert.rejects(hashPassword(''));
});

test('sessions expire at their TTL and the store stays bounded', () => {
  const clock = new FakeClock();
  const store = new SessionStore(1000, () => clock.nowMs());
  const { id, csrfToken } = store.create('alice', 'admin');
  assert.match(id, /^[A-Za-z0-9_-]{43}$/);
  assert.notEqual(csrfToken, id);
  assert.equal(store.get(id)?.user, 'alice');
  assert.equal(store.get(`${id}x`), undefined);
  clock.advance(999);
  assert.ok(store.get(id));
  clock.advance(1);
  assert.equal(store.get(id), undefined);
  // Bounded per user (users come from the config, so that bounds the whole store).
  for (let i = 0; i < 10_050; i++) store.create('bob', 'viewer');
  assert.equal(store.size, 10);
});
