/**
 * Job lists across queues and states (job-browse.ts) and the search box
 * (job-search.ts) against a real engine: merged order, paging forwards and
 * backwards without gaps or repeats, due order for scheduled jobs and retries,
 * filters the indexes cannot answer searched within a budget that the page
 * reports, and every way to find a job.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { JobBrowsePage, JobBrowseQuery } from '../../src/engine/admin-types.ts';
import { enc } from '../helpers/admin.ts';
import { openTestEngine, type TestEngine } from '../helpers/engine.ts';

let t: TestEngine;
const ids: Record<string, string[]> = { emails: [], reports: [], hooks: [] };

before(async () => {
  t = await openTestEngine();
  const { engine, clock } = t;
  for (let i = 0; i < 30; i++) {
    const queue = ['emails', 'reports', 'hooks'][i % 3]!;
    const type = i % 2 === 0 ? 'send.welcome' : 'report.daily';
    const { jobId } = await engine.enqueue({
      queue,
      type,
      payload: enc(`{"n":${i}}`),
      idempotencyKey: `key-${i}`,
      metadata: { tenant: i % 5 === 0 ? 'acme' : 'globex' },
      // Later jobs are due sooner, so due order is the reverse of enqueue order.
      ...(i >= 20 ? { delayMs: (40 - i) * 60_000 } : {}),
    });
    ids[queue]!.push(jobId);
    clock.advance(7);
  }
});

after(() => t.dispose());

/** Every page of a list, following nextCursor, then back again with prevCursor. */
async function walk(
  query: JobBrowseQuery,
  pageSize: number,
): Promise<{ forward: string[]; backward: string[]; pages: JobBrowsePage[] }> {
  const pages: JobBrowsePage[] = [];
  let page = await t.engine.browseJobs({ ...query, pageSize });
  pages.push(page);
  while (page.nextCursor !== null && pages.length < 100) {
    page = await t.engine.browseJobs({ ...query, pageSize, cursor: page.nextCursor });
    pages.push(page);
  }
  const forward = pages.flatMap((p) => p.items.map((j) => j.id));
  const backward: string[] = [];
  let back = page;
  backward.unshift(...back.items.map((j) => j.id));
  while (back.prevCursor !== null && backward.length < 1000) {
    back = await t.engine.browseJobs({ ...query, pageSize, cursor: back.prevCursor });
    backward.unshift(...back.items.map((j) => j.id));
  }
  return { forward, backward, pages };
}

test('all queues and states in enqueue order, paged both ways without gaps or repeats', async () => {
  const { forward, backward, pages } = await walk({}, 7);
  const all = (await t.engine.browseJobs({ pageSize: 100 })).items.map((j) => j.id);
  assert.equal(all.length, 30);
  assert.deepEqual([...all].sort(), all, 'ids are time-ordered, so enqueue order sorts them');
  assert.deepEqual(forward, all);
  assert.deepEqual(backward, all);
  assert.equal(pages[0]!.total, 30);
  assert.equal(pages[0]!.prevCursor, null, 'the first page has no previous page');
  const newest = (await t.engine.browseJobs({ order: 'newest_first', pageSize: 100 })).items.map((j) => j.id);
  assert.deepEqual(newest, [...all].reverse());
});

test('a type prefix in one queue and state', async () => {
  const page = await t.engine.browseJobs({
    queue: 'emails',
    state: 'ready',
    typePrefix: 'send.',
    pageSize: 100,
  });
  assert.ok(page.items.length > 0);
  assert.ok(
    page.items.every((j) => j.queue === 'emails' && j.state === 'ready' && j.type.startsWith('send.')),
  );
  assert.equal(page.total, null, 'a filtered list has no count from the counters');
});

test('scheduled jobs come by due time, soonest first, in every queue', async () => {
  const { forward } = await walk({ state: 'scheduled' }, 3);
  const page = await t.engine.browseJobs({ state: 'scheduled', pageSize: 100 });
  assert.equal(page.orderedBy, 'due');
  assert.equal(page.items.length, 10);
  const due = page.items.map((j) => j.runAtMs);
  assert.deepEqual(
    due,
    [...due].sort((a, b) => a - b),
  );
  assert.deepEqual(
    forward,
    page.items.map((j) => j.id),
  );
});

test('retries are the scheduled jobs that failed an attempt, by due time', async () => {
  const [leased] = await t.engine.reserve({ queues: ['hooks'], maxJobs: 1 });
  assert.ok(leased);
  await t.engine.nack({
    jobId: leased.id,
    attempt: 1,
    error: 'HTTP 502 from hooks.example',
    directive: { kind: 'delay', delayMs: 5000 },
  });
  const page = await t.engine.browseJobs({ state: 'retrying' });
  assert.deepEqual(
    page.items.map((j) => j.id),
    [leased.id],
  );
  assert.equal(page.items[0]!.lastError, 'HTTP 502 from hooks.example');
  const byError = await t.engine.browseJobs({ errorText: 'http 502' });
  assert.deepEqual(
    byError.items.map((j) => j.id),
    [leased.id],
  );
  assert.equal(byError.scanned, 30, 'the error filter says how many jobs it looked at');
  assert.equal(byError.scanLimited, false);
});

test('a metadata filter', async () => {
  const page = await t.engine.browseJobs({ metadata: { key: 'tenant', value: 'acme' }, pageSize: 100 });
  assert.equal(page.items.length, 6);
  await assert.rejects(
    async () => t.engine.browseJobs({ metadata: { key: 'a"b', value: 'x' } }),
    /metadata key/,
  );
});

test('a cursor of another list is refused', async () => {
  const page = await t.engine.browseJobs({ pageSize: 2 });
  assert.ok(page.nextCursor);
  await assert.rejects(
    async () => t.engine.browseJobs({ state: 'scheduled', cursor: page.nextCursor! }),
    /cursor is not one/,
  );
  await assert.rejects(async () => t.engine.browseJobs({ cursor: 'bm90IGEgY3Vyc29y' }), /cursor is not one/);
});

test('search: a full id in any case, its distinctive end, its start, and idempotency keys in any queue', async () => {
  const id = ids.reports![2]!;
  assert.deepEqual(
    (await t.engine.searchJobs(id.toUpperCase())).items.map((j) => [j.id, j.matchedBy]),
    [[id, 'id']],
  );
  const end = await t.engine.searchJobs(`…${id.slice(-8)}`);
  assert.deepEqual(
    end.items.map((j) => [j.id, j.matchedBy]),
    [[id, 'id_fragment']],
  );
  assert.equal(end.idsSearched, 30);
  const start = await t.engine.searchJobs(id.slice(0, 13));
  assert.ok(start.items.some((j) => j.id === id && j.matchedBy === 'id_prefix'));
  assert.equal(start.idsSearched, null, 'the start of an id matched: no scan for a piece from the end');
  const byKey = await t.engine.searchJobs('key-7');
  assert.deepEqual(
    byKey.items.map((j) => [j.queue, j.matchedBy]),
    [['reports', 'idempotency_key']],
  );
  assert.deepEqual((await t.engine.searchJobs('no-such-thing')).items, []);
  assert.deepEqual(await t.engine.counterMismatches(), []);
});
