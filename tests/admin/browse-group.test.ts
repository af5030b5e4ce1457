/**
 * The jobs list's group filter (GET /api/v1/jobs?group=): only that group's
 * jobs, across queues and states and in the due-ordered lists, the group in
 * every row, a bad name refused at the boundary, and the page saying how far
 * it searched (the group is checked row by row on the index ranges).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { JobBrowsePage } from '../../src/engine/admin-types.ts';
import { enc, loggedIn, openTestAdmin, type TestAdmin, type TestClient } from '../helpers/admin.ts';

let admin: TestAdmin;
let viewer: TestClient;
const byGroup: Record<string, string[]> = { acme: [], globex: [], none: [] };

before(async () => {
  admin = await openTestAdmin();
  viewer = await loggedIn(admin, 'viewer');
  const groups = ['acme', 'globex', undefined] as const;
  for (let i = 0; i < 12; i++) {
    const group = groups[i % 3];
    const { jobId } = await admin.t.engine.enqueue({
      queue: i % 2 === 0 ? 'emails' : 'reports',
      type: 'send',
      payload: enc('x'),
      ...(group === undefined ? {} : { group }),
      ...(i >= 9 ? { delayMs: 60_000 } : {}),
    });
    byGroup[group ?? 'none']!.push(jobId);
    admin.t.clock.advance(5);
  }
});
after(() => admin.dispose());

const list = (query: string) => viewer.get<JobBrowsePage>(`/api/v1/jobs?${query}`);

test('group=acme lists only acme jobs of every queue and state, with the group in each row', async () => {
  const reply = await list('group=acme&limit=100');
  assert.equal(reply.status, 200);
  assert.deepEqual(
    reply.body.items.map((j) => j.id),
    byGroup.acme,
  );
  assert.ok(reply.body.items.every((j) => j.group === 'acme'));
  assert.equal(reply.body.total, null, 'the counters do not know groups');
  assert.equal(reply.body.scanned, 12, 'the page says how many jobs it checked');
  const unfiltered = await list('limit=100');
  assert.equal(unfiltered.body.items.length, 12);
  assert.deepEqual(
    unfiltered.body.items.filter((j) => j.group === null).map((j) => j.id),
    byGroup.none,
    'jobs without a group say group: null',
  );
});

test('the group filter combines with queue, state and the due-ordered scheduled list', async () => {
  const ready = await list('queue=emails&state=ready&group=globex');
  assert.ok(ready.body.items.length > 0);
  assert.ok(
    ready.body.items.every((j) => j.queue === 'emails' && j.state === 'ready' && j.group === 'globex'),
  );
  const scheduled = await list('state=scheduled&group=acme');
  assert.deepEqual(
    scheduled.body.items.map((j) => [j.state, j.group]),
    [['scheduled', 'acme']],
  );
  assert.equal(scheduled.body.orderedBy, 'due');
  assert.deepEqual((await list('group=nobody')).body.items, []);
  assert.equal((await list('group=')).body.items.length, 12, 'an empty group means any');
});

test('a group that is not a valid name is refused with a message', async () => {
  const reply = await list('group=a%20b');
  assert.equal(reply.status, 400);
  assert.match(JSON.stringify(reply.body), /group/);
  assert.equal((await list(`group=${'g'.repeat(300)}`)).status, 400);
});
