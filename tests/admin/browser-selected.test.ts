/**
 * Acting on selected rows of the Jobs page is one call and one audit entry
 * (issue 36: requeue of 50 dead jobs was 50 calls and 50 audit entries), in
 * Debian's headless Chromium against a real server: dead letters of two queues
 * are ticked and requeued, and the page makes one POST, to
 * /api/v1/bulk/selected/requeue, which writes one entry counting them; the same
 * for dead-letter (it was one call and one entry per job), whose action the
 * audit log's filter offers. And the Dead letters page filters by text of the
 * last error, as its API does, saying "Loading…" until the filtered rows come.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import type { Engine } from '../../src/engine/engine.ts';
import { enc } from '../helpers/admin.ts';
import { answerDialog, logIn, startUiServer, type UiServer, visit, watch } from '../helpers/browser.ts';

const user = { name: 'op', password: 'selected-rows-password', role: 'operator' } as const;

let ui: UiServer;
let engine: Engine;
let page: Page;
const problems: string[] = [];
const posts: string[] = [];

before(async () => {
  ui = await startUiServer(user, '[queues.mail]\n\n[queues.sms]\n\n[queues.push]\n');
  engine = ui.t.server.engine;
  for (const queue of ['mail', 'mail', 'sms', 'sms']) {
    await engine.enqueue({ queue, type: 'welcome', payload: enc('x') });
    const [job] = await engine.reserve({ queues: [queue], maxJobs: 1 });
    assert.ok(job);
    await engine.nack({ jobId: job.id, attempt: 1, error: 'boom', directive: { kind: 'dead_letter' } });
  }
  page = watch(ui.context.pages()[0] ?? (await ui.context.newPage()), problems);
  page.on('request', (request) => {
    const url = new URL(request.url());
    if (request.method() === 'POST' && url.pathname.startsWith('/api/v1/')) posts.push(url.pathname);
  });
  await logIn(page, `${ui.adminUrl}/`, user);
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
});
after(() => ui?.dispose());

test('requeue of selected rows across queues is one call and one audit entry with the count', async () => {
  const dead = (await engine.browseJobs({ state: 'dead' })).items.map((j) => j.id);
  assert.equal(dead.length, 4);
  await visit(page, `${ui.adminUrl}/jobs?state=dead`);
  for (const id of dead.slice(0, 3)) await page.getByRole('checkbox', { name: `Select job ${id}` }).check();
  const audits = (await engine.listAudit({})).items.length;
  posts.length = 0;
  await page.getByRole('button', { name: 'Requeue 3…' }).click();
  await answerDialog(page.getByRole('dialog'), 'Requeue 3 jobs');
  await page.getByText('Requeued 3 jobs.').first().waitFor();
  assert.deepEqual(posts, ['/api/v1/bulk/selected/requeue']);
  const entries = (await engine.listAudit({})).items;
  assert.equal(entries.length, audits + 1);
  assert.deepEqual(
    [entries[0]?.action, entries[0]?.actor, entries[0]?.details.selected, entries[0]?.details.changed],
    ['jobs.requeue', 'op', 3, 3],
  );
  const states = await Promise.all(dead.map(async (id) => (await engine.getJob(id)).state));
  assert.deepEqual(states, ['ready', 'ready', 'ready', 'dead']);
  assert.deepEqual(problems, []);
});

test('the Dead letters page filters by text of the last error', async () => {
  for (const error of ['SMTP timeout', 'mailbox full', 'smtp timeout again']) {
    await engine.enqueue({ queue: 'push', type: 'welcome', payload: enc('x') });
    const [job] = await engine.reserve({ queues: ['push'], maxJobs: 1 });
    assert.ok(job);
    await engine.nack({ jobId: job.id, attempt: 1, error, directive: { kind: 'dead_letter' } });
  }
  await visit(page, `${ui.adminUrl}/dead-letters?queue=push`);
  const table = page.getByRole('table', { name: 'dead letters of push' });
  await table.getByRole('cell', { name: 'mailbox full' }).waitFor();
  await page.getByLabel('Error contains').fill('smtp');
  // Between the two answers the page says it is loading: neither the old rows (a bulk action
  // must not reach rows of the old filter) nor "No dead letters …" (it counted 0 of 2 rows once
  // there). The filtered answer is held until that is seen.
  const filtered = (url: URL) =>
    url.pathname === '/api/v1/queues/push/dead-letters' && url.searchParams.get('error') === 'smtp';
  let answer = () => {};
  const held = new Promise<void>((resolve) => {
    answer = resolve;
  });
  const answered: Promise<void>[] = [];
  await page.route(filtered, (route) => {
    answered.push(held.then(() => route.continue()));
  });
  await page.getByRole('button', { name: 'Apply' }).click();
  await table.waitFor({ state: 'detached' });
  const empty = page.getByText(/^No dead letters in push/);
  await page.getByText('Loading…').or(empty).first().waitFor();
  assert.equal(await empty.count(), 0, 'an empty list before the answer');
  assert.equal(await page.getByText('Loading…').count(), 1);
  answer();
  await Promise.all(answered);
  await page.unroute(filtered);
  const smtpRows = table.getByRole('cell', { name: /smtp timeout/i });
  await smtpRows.first().waitFor();
  assert.equal(new URL(page.url()).searchParams.get('error'), 'smtp');
  assert.equal(await smtpRows.count(), 2);
  assert.equal(await page.getByLabel('Error contains').inputValue(), 'smtp');
  assert.deepEqual(problems, []);
});

test('dead-letter of selected rows across queues is one call and one jobs.dead_letter audit entry', async () => {
  const ready = (await engine.browseJobs({ state: 'ready' })).items.map((j) => j.id);
  assert.equal(ready.length, 3, 'the three requeued above');
  await visit(page, `${ui.adminUrl}/jobs?state=ready`);
  for (const id of ready) await page.getByRole('checkbox', { name: `Select job ${id}` }).check();
  const audits = (await engine.listAudit({})).items.length;
  posts.length = 0;
  await page.getByRole('button', { name: 'Dead-letter 3…' }).click();
  await answerDialog(page.getByRole('dialog'), 'Dead-letter 3 jobs');
  await page.getByText('Dead-lettered 3 jobs.').first().waitFor();
  assert.deepEqual(posts, ['/api/v1/bulk/selected/dead-letter'], 'one call (it was one per job)');
  const entries = (await engine.listAudit({})).items;
  assert.equal(entries.length, audits + 1);
  assert.deepEqual(
    [entries[0]?.action, entries[0]?.actor, entries[0]?.details.selected, entries[0]?.details.changed],
    ['jobs.dead_letter', 'op', 3, 3],
  );
  const states = await Promise.all(ready.map(async (id) => (await engine.getJob(id)).state));
  assert.deepEqual(states, ['dead', 'dead', 'dead']);
  // The audit log's action filter offers the new action and finds the entry.
  await visit(page, `${ui.adminUrl}/audit`);
  const rows = page.getByRole('table', { name: 'audit entries' }).getByRole('row');
  await rows.filter({ hasText: 'jobs.requeue' }).first().waitFor();
  await page.getByLabel('Action').selectOption('jobs.dead_letter');
  await page.getByRole('button', { name: 'Filter', exact: true }).click();
  await rows.filter({ hasText: 'jobs.requeue' }).first().waitFor({ state: 'detached' });
  await rows.filter({ hasText: 'jobs.dead_letter' }).first().waitFor();
  assert.equal(await rows.count(), 2, 'a header and the one entry');
  assert.deepEqual(problems, []);
});
