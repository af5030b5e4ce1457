/**
 * Acting on every job a filter matches, across queues, with the age filter
 * (issue 36, item 1), in Debian's headless Chromium against a real server: dead
 * letters of two queues, some enqueued two hours ago and some now; the Jobs
 * page's **Enqueued** field ("over 1 hour ago") fixes the moment in the
 * address, the list and its total show the old ones only, and **Requeue all
 * matching** names the count before the confirmation, then is one operation
 * (a counting POST and a starting one, nothing per job) and one audit entry
 * holding the age — also when the start's answer is lost and the dialog's
 * button is pressed again (the dialog's request key: the server answers with
 * the operation already started). The Dead letters page takes the same age and names its
 * count. Desktop light, 375 px phone dark. Screenshots (SEPP_SCREENSHOTS=1):
 * tests/artifacts/admin/bulk-matching-*.png.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { FakeClock } from '../../src/engine/clock.ts';
import type { Engine } from '../../src/engine/engine.ts';
import { enc } from '../helpers/admin.ts';
import {
  answerDialog,
  desktop,
  logIn,
  phone,
  shot,
  sidewaysOverflow,
  startUiServer,
  type UiServer,
  visit,
  watch,
} from '../helpers/browser.ts';

const user = { name: 'bulkop', password: 'bulk-matching-password', role: 'operator' } as const;
const hour = 3_600_000;

let ui: UiServer;
let engine: Engine;
let clock: FakeClock;
let page: Page;
const problems: string[] = [];
/** The API's POSTs the page made: path and body. */
const posts: { path: string; body: Record<string, unknown> }[] = [];
const old: string[] = [];
const url = (path: string) => `${ui.adminUrl}${path}`;

async function deadLetter(queue: string): Promise<string> {
  const { jobId } = await engine.enqueue({ queue, type: 'welcome', payload: enc('x') });
  const [job] = await engine.reserve({ queues: [queue], maxJobs: 1 });
  assert.equal(job?.id, jobId);
  await engine.nack({ jobId, attempt: 1, error: 'smtp refused', directive: { kind: 'dead_letter' } });
  return jobId;
}

before(async () => {
  // Two hours ago on the server's clock: the old dead letters; then now (the browser's time too).
  clock = new FakeClock(Date.now() - 2 * hour);
  ui = await startUiServer(user, '[queues.mail]\n\n[queues.sms]\n\n[queues.push]\n', { clock });
  engine = ui.t.server.engine;
  for (const queue of ['mail', 'sms', 'mail', 'sms', 'mail']) old.push(await deadLetter(queue));
  clock.advance(2 * hour);
  for (const queue of ['mail', 'mail']) await deadLetter(queue);
  page = watch(ui.context.pages()[0] ?? (await ui.context.newPage()), problems);
  page.on('request', (request) => {
    const path = new URL(request.url()).pathname;
    if (request.method() === 'POST' && path.startsWith('/api/v1/')) {
      posts.push({ path, body: JSON.parse(request.postData() ?? '{}') as Record<string, unknown> });
    }
  });
  await logIn(page, url('/'), user);
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
});
after(() => ui?.dispose());

/** Opens the dead jobs of every queue and chooses "over 1 hour ago"; answers the moment the address holds. */
async function olderThanAnHour(): Promise<number> {
  await visit(page, url('/jobs?state=dead'));
  await page.getByText('7 dead jobs in all queues').waitFor();
  // On a phone the filters start folded.
  const bar = page.locator('details.filter-bar');
  if ((await bar.getAttribute('open')) === null) await bar.locator('summary').click();
  await page.getByLabel('Enqueued').selectOption({ label: 'over 1 hour ago' });
  await page.waitForURL(/enqueuedBeforeMs=\d+/);
  const before = Number(new URL(page.url()).searchParams.get('enqueuedBeforeMs'));
  assert.ok(Math.abs(before - (Date.now() - hour)) < 60_000, 'an hour before now');
  // The list's total is counted on the server with the same filter: 5 of the 7.
  await page.getByText(/^5 jobs: dead jobs in all queues enqueued before /).waitFor();
  return before;
}

test('on a phone, dark: the age filter, the total and "Requeue all matching" with its count fit 375 px', async () => {
  await page.setViewportSize(phone);
  await page.emulateMedia({ colorScheme: 'dark' });
  await olderThanAnHour();
  const rows = page.getByRole('table', { name: /dead jobs in all queues enqueued before/ }).getByRole('row');
  assert.equal(await rows.count(), 6, 'a header and the 5 old dead letters');
  posts.length = 0;
  await page.getByRole('button', { name: 'Requeue all matching' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByText('5 jobs match.', { exact: false }).waitFor();
  await dialog
    .getByRole('heading', { name: /^Requeue 5 dead jobs enqueued before .* in all queues\?$/ })
    .waitFor();
  assert.equal(await sidewaysOverflow(page), 0);
  await shot(page, 'bulk-matching-confirm-dark-phone');
  await answerDialog(dialog, 'Keep them');
  assert.deepEqual(
    posts.map((p) => [p.path, p.body.dryRun]),
    [['/api/v1/bulk/requeue', true]],
    'asking is a count, nothing changes',
  );
  await page.emulateMedia({ colorScheme: 'light' });
  assert.deepEqual(problems, []);
});

test('requeue all N matching across two queues: the count first, one operation (its answer lost, the button pressed again), one audit entry with the age', async () => {
  await page.setViewportSize(desktop);
  const before = await olderThanAnHour();
  await shot(page, 'bulk-matching-list-desktop');
  posts.length = 0;
  const audits = (await engine.listAudit({})).items.length;
  await page.getByRole('button', { name: 'Requeue all matching' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByText('5 jobs match.', { exact: false }).waitFor();
  await shot(page, 'bulk-matching-confirm-desktop');
  // The first start reaches the server, which starts the operation; its answer is lost on the way back.
  await page.route(
    '**/api/v1/bulk/requeue',
    async (route) => {
      await route.fetch();
      await route.abort('connectionreset');
    },
    { times: 1 },
  );
  await dialog.getByRole('button', { name: 'Requeue 5 jobs', exact: true }).click();
  // The dialog stays open with the error; its button again repeats the request under the same key.
  await dialog.getByRole('alert').getByText('cannot reach the sepp server', { exact: false }).waitFor();
  await answerDialog(dialog, 'Requeue 5 jobs');
  await page
    .getByText(/^Requeued 5 dead jobs enqueued before .* in all queues\.$/)
    .first()
    .waitFor();
  // The count, then the start twice with the dialog's one key; the same filter in each.
  const filter = { state: 'dead', enqueuedBeforeMs: before };
  const requestKey = posts[1]?.body.requestKey;
  assert.match(String(requestKey), /^ui-[0-9a-f]{32}$/);
  assert.deepEqual(posts, [
    { path: '/api/v1/bulk/requeue', body: { ...filter, dryRun: true } },
    { path: '/api/v1/bulk/requeue', body: { ...filter, requestKey } },
    { path: '/api/v1/bulk/requeue', body: { ...filter, requestKey } },
  ]);
  // The lost answer, as Chromium logs it; nothing else.
  const lost = problems.findIndex((p) => p.includes('/api/v1/bulk/requeue'));
  if (lost >= 0) problems.splice(lost, 1);
  const entries = (await engine.listAudit({})).items;
  assert.equal(entries.length, audits + 1, 'one audit entry for the operation');
  assert.deepEqual(
    [
      entries[0]?.action,
      entries[0]?.actor,
      entries[0]?.target,
      entries[0]?.details.enqueuedBeforeMs,
      entries[0]?.details.matched,
      entries[0]?.details.changed,
    ],
    ['jobs.requeue', 'bulkop', 'queue:*', before, 5, 5],
  );
  const states = await Promise.all(old.map(async (id) => (await engine.getJob(id)).state));
  assert.deepEqual(states, ['ready', 'ready', 'ready', 'ready', 'ready']);
  const counts = Object.fromEntries(
    (await engine.listQueues())
      .filter((q) => q.name !== 'push')
      .map((q) => [q.name, [q.counts.ready, q.counts.dead]]),
  );
  assert.deepEqual(counts, { mail: [3, 2], sms: [2, 0] }, 'the two new dead letters stay');
  await page.getByText('No dead jobs in all queues enqueued before', { exact: false }).waitFor();
  assert.deepEqual(problems, []);
});

test('the Dead letters page filters by age and names the count of "Requeue all"', async () => {
  const more = [await deadLetter('push')];
  clock.advance(1000);
  await visit(page, url('/dead-letters?queue=mail'));
  const table = page.getByRole('table', { name: 'dead letters of mail' });
  await table.getByRole('row').nth(2).waitFor();
  assert.equal(await table.getByRole('row').count(), 3, 'a header and the 2 new ones');
  await visit(page, url(`/dead-letters?queue=push&enqueuedBeforeMs=${clock.nowMs()}`));
  await page.getByRole('button', { name: 'Requeue all 1…' }).waitFor();
  await page.getByLabel('Enqueued').selectOption({ label: 'over 1 hour ago' });
  await page.getByText(/^No dead letters in push, enqueued before /).waitFor();
  assert.ok(new URL(page.url()).searchParams.get('enqueuedBeforeMs'));
  assert.equal((await engine.getJob(more[0] as string)).state, 'dead');
  assert.deepEqual(problems, []);
});
