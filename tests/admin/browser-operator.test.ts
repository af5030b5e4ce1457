/**
 * The admin UI as an operator's tool (issue 21), in Debian's headless Chromium
 * against a real server on port 0: finding jobs, lists across queues, bulk
 * selection that never reaches rows off screen, counts that follow every
 * action, workers and stuck leases, the dashboard's rates, and what the UI
 * says when the server stops answering. One browser and one server for the
 * file; desktop and phone sizes; screenshots in tests/artifacts/admin/ (the Workers page;
 * the states reached with SEPP_SCREENSHOTS=1).
 * Each "bug" below is one the issue lists; the test fails on the UI before it.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { BrowserContext, Page, Request, Response } from 'playwright-core';
import type { Engine } from '../../src/engine/engine.ts';
import { enc } from '../helpers/admin.ts';
import {
  answerDialog,
  desktop,
  logIn,
  phone,
  root,
  shot,
  sidewaysOverflow,
  startUiServer,
  type UiServer,
  visit,
  watch,
} from '../helpers/browser.ts';
import { call, type TestServer } from '../helpers/server.ts';

const user = { name: 'ops', password: 'operator-browser-password', role: 'admin' } as const;

let ui: UiServer;
let t: TestServer;
let engine: Engine;
let context: BrowserContext;
let page: Page;
let url: (path: string) => string;
const problems: string[] = [];

/** `n` dead letters in `queue`, the first failed longest ago. */
async function deadLetters(
  queue: string,
  n: number,
  error = 'SMTP 550: mailbox unavailable',
): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const { jobId } = await engine.enqueue({ queue, type: 'send_welcome', payload: enc(`{"n":${i}}`) });
    ids.push(jobId);
  }
  for (const id of ids) {
    const [job] = await engine.reserve({ queues: [queue], maxJobs: 1 });
    assert.equal(job?.id, id);
    await engine.nack({ jobId: id, attempt: 1, error, directive: { kind: 'dead_letter' } });
  }
  return ids;
}

async function login(p: Page): Promise<void> {
  await logIn(p, url('/'), user);
  await p.getByRole('heading', { name: 'Dashboard' }).waitFor();
}

const selector = (p: Page, id: string) => p.locator(`#${id}`);

before(async () => {
  ui = await startUiServer(user);
  ({ t, context } = ui);
  engine = t.server.engine;
  url = (path) => `${ui.adminUrl}${path}`;
  page = watch(context.pages()[0] ?? (await context.newPage()), problems);
  await login(page);
});

after(() => ui?.dispose());

test('bug: Select all, then Next page, selects nothing on the new page; bulk actions reach only rows on screen', async () => {
  const ids = await deadLetters('mail', 60);
  await visit(page, url('/dead-letters?queue=mail'));
  const selectAll = page.getByLabel('Select all 50 on this page');
  await selectAll.check();
  await page.getByText('50 selected').waitFor();
  await shot(page, 'dead-letters-selected-desktop');
  await page.getByRole('button', { name: 'Next ›' }).click();
  await page.getByLabel('Select all 10 on this page').waitFor();
  await page.getByText('0 selected').waitFor();
  assert.equal(await page.getByRole('checkbox', { checked: true }).count(), 0, 'nothing is ticked on page 2');
  assert.equal(await page.getByRole('button', { name: 'Delete selected' }).isDisabled(), true);
  assert.match(page.url(), /[?&]cursor=/, 'the page is in the URL');
  await shot(page, 'dead-letters-page2-desktop');
  // A reload keeps the page; Previous goes back to the first one.
  await page.reload();
  await page.getByLabel('Select all 10 on this page').waitFor();
  await page.getByRole('button', { name: '‹ Previous' }).click();
  await page.getByLabel('Select all 50 on this page').waitFor();
  await page.getByText('0 selected').waitFor();
  // Tick two and delete them: exactly those two go.
  const newest = [ids[59]!, ids[58]!];
  for (const id of newest) await page.getByLabel(`Select job ${id}`).check();
  await page.getByText('2 selected').waitFor();
  await shot(page, 'dead-letters-two-selected-desktop');
  await page.getByRole('button', { name: 'Delete selected' }).click();
  await page.getByRole('dialog').getByRole('heading', { name: 'Delete 2 dead letters?' }).waitFor();
  await answerDialog(page.getByRole('dialog'), 'Delete 2 dead letters');
  await page.getByText('Deleted 2 dead letters.').waitFor();
  assert.equal((await engine.listQueues()).find((q) => q.name === 'mail')?.counts.dead, 58);
  for (const id of newest) await assert.rejects(async () => engine.getJob(id), /does not exist/);
});

test('bug: dead-letter counts in the queue selector follow every action; requeue-all says how many (its answer lost, pressed again: one operation); requeuing none says why', async () => {
  await visit(page, url('/dead-letters?queue=mail'));
  await selector(page, 'dl-queue').locator('option', { hasText: 'mail (58)' }).waitFor({ state: 'attached' });
  await page.getByRole('button', { name: 'Requeue all 58…' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByRole('heading', { name: 'Requeue all 58 dead letters of mail?' }).waitFor();
  await shot(page, 'requeue-all-confirm-desktop');
  // The first press reaches the server, which requeues them; its answer is lost on the way back.
  const keys: unknown[] = [];
  const record = (request: Request) => {
    if (request.url().endsWith('/dead-letters/requeue-all')) keys.push(request.postDataJSON()?.requestKey);
  };
  page.on('request', record);
  await page.route(
    '**/api/v1/queues/mail/dead-letters/requeue-all',
    async (route) => {
      await route.fetch();
      await route.abort('connectionreset');
    },
    { times: 1 },
  );
  const audits = (await engine.listAudit({})).items.length;
  await dialog.getByRole('button', { name: 'Requeue 58', exact: true }).click();
  // The dialog stays open with the error; its button again repeats the request under the same key.
  await dialog.getByRole('alert').getByText('cannot reach the sepp server', { exact: false }).waitFor();
  await answerDialog(dialog, 'Requeue 58');
  await page.getByText('Requeued 58 dead letters.').waitFor();
  page.off('request', record);
  assert.equal(keys.length, 2);
  assert.match(String(keys[0]), /^ui-[0-9a-f]{32}$/);
  assert.equal(keys[1], keys[0]);
  assert.equal((await engine.listAudit({})).items.length, audits + 1, 'one operation, one audit entry');
  await selector(page, 'dl-queue').locator('option', { hasText: 'mail (0)' }).waitFor({ state: 'attached' });

  // A dead letter deleted by someone else between the page and the click.
  const [gone] = await deadLetters('mail-late', 1);
  await visit(page, url('/dead-letters?queue=mail-late'));
  await page.getByRole('button', { name: `Requeue job ${gone}` }).waitFor();
  await engine.deleteDeadLetters({ queue: 'mail-late', jobIds: [gone!] });
  await page.getByRole('button', { name: `Requeue job ${gone}` }).click();
  await answerDialog(page.getByRole('dialog'), 'Requeue 1 dead letter');
  await page.getByText(/Requeued no dead letters: they were already requeued or deleted/).waitFor();
});

test('search: the id as lists show it, a full id in capitals, the start of an id, an idempotency key', async () => {
  const { jobId } = await engine.enqueue({
    queue: 'billing',
    type: 'invoice.send',
    payload: enc('{}'),
    idempotencyKey: 'invoice-2026-0042',
  });
  await visit(page, url(`/jobs?queue=billing&state=ready`));
  const shown = `…${jobId.slice(-8)}`;
  await page
    .getByRole('link', { name: `job ${jobId}` })
    .filter({ hasText: shown })
    .waitFor();
  // Bug: typing the displayed id into Find was taken as an idempotency key.
  for (const text of [shown, jobId.toUpperCase(), 'invoice-2026-0042']) {
    await page.keyboard.press('/');
    await page.keyboard.insertText(text);
    await page.keyboard.press('Enter');
    await page.waitForURL(`**/jobs/${jobId}`);
    await page.getByRole('heading', { name: `Job ${shown}` }).waitFor();
    await page.locator('#top-search').fill('');
    await page.locator('#top-search').blur(); // `/` typed into a field is text, not a shortcut
  }
  await page.locator('#top-search').fill('no-such-key-anywhere');
  await page.locator('#top-search').press('Enter');
  await page.getByText('No job found').waitFor();
  await shot(page, 'search-none-desktop');
});

test('jobs across queues; scheduled jobs by due time with the Due column on phones; per-state columns', async () => {
  const delaysMin = [30, 5, 50, 15, 40];
  for (const [i, delay] of delaysMin.entries()) {
    await engine.enqueue({
      queue: i % 2 === 0 ? 'reports' : 'billing',
      type: 'report.weekly',
      payload: enc('{}'),
      delayMs: delay * 60_000,
    });
  }
  await visit(page, url('/jobs?state=scheduled'));
  const table = page.getByRole('table', { name: 'scheduled jobs in all queues' });
  await table.waitFor();
  const dueCells = table.locator('td[data-label="Due"] time');
  assert.equal(await dueCells.count(), 5);
  const due = await dueCells.evaluateAll((cells) => cells.map((c) => c.getAttribute('datetime') ?? ''));
  assert.deepEqual(due, [...due].sort(), 'soonest due first');
  assert.equal(await table.locator('td[data-label="Queue"]').count(), 5, 'all queues: a Queue column');
  await shot(page, 'jobs-scheduled-desktop');
  const small = watch(await context.newPage(), problems);
  await small.setViewportSize(phone);
  await visit(small, url('/jobs?state=scheduled'));
  const firstDue = small.locator('td[data-label="Due"]').first();
  await firstDue.waitFor();
  assert.equal(await firstDue.isVisible(), true, 'the Due column shows on phones');
  assert.ok((await sidewaysOverflow(small)) <= 0);
  await shot(small, 'jobs-scheduled-phone');
  // Select all is a real control on phones, not a 1×1 px checkbox.
  const box = await small.getByLabel(/^Select all \d+ on this page$/).boundingBox();
  assert.ok(box !== null && box.width >= 16 && box.height >= 16, `Select all is ${JSON.stringify(box)}`);
  await small.getByText(/^Select all \d+ on this page$/).click();
  await small.getByText('5 selected').waitFor();
  await shot(small, 'jobs-selected-phone');
  await small.close();
});

test('bug: unknown queues offer no actions, the jobs selector says so, and the enqueue form offers existing queues', async () => {
  await visit(page, url('/queues/doesnotexist'));
  await page.getByText('There is no queue doesnotexist').waitFor();
  assert.equal(
    await page
      .getByRole('link', { name: 'Enqueue' })
      .filter({ hasText: /^Enqueue$/ })
      .count(),
    1,
    'only the nav link',
  );
  assert.equal(await page.getByRole('button', { name: 'Purge…' }).count(), 0);
  await shot(page, 'queue-unknown-desktop');
  await visit(page, url('/jobs?queue=doesnotexist'));
  await page.getByText('There is no queue doesnotexist').waitFor();
  assert.equal(await selector(page, 'jobs-queue').inputValue(), 'doesnotexist');
  await selector(page, 'jobs-queue')
    .locator('option', { hasText: 'doesnotexist (no such queue)' })
    .waitFor({ state: 'attached' });
  // The queue list answering late (a busy machine): the dead letters of a queue that is not in it
  // are not read before it says whether the queue exists (a queue that is gone answers 404).
  const queueList = '**/api/v1/queues';
  await page.route(queueList, async (route) => {
    await new Promise((later) => setTimeout(later, 500));
    await route.continue();
  });
  const refused: string[] = [];
  const onAnswer = (answer: Response) => {
    if (answer.status() >= 400) refused.push(`${answer.status()} ${answer.url()}`);
  };
  page.on('response', onAnswer);
  await visit(page, url('/dead-letters?queue=doesnotexist&error=boom'));
  await page.getByText('There is no queue doesnotexist').waitFor();
  await page.unroute(queueList);
  page.off('response', onAnswer);
  assert.deepEqual(refused, [], 'no read of the queue that is not there');
  await visit(page, url('/enqueue'));
  const queueField = page.getByLabel('Queue', { exact: true });
  assert.equal(await queueField.evaluate((el) => el.tagName), 'SELECT', 'a typo cannot create a queue');
  await queueField.selectOption('billing');
});

test('bug: a dead job says Delete, returns to Dead letters, and its timeline shows one line per failure', async () => {
  const trace = 'TypeError: cannot read x\n    at send (mailer.js:10:5)\n    at run (worker.js:3:1)';
  const [id] = await deadLetters('crashes', 1, trace);
  await visit(page, url(`/jobs/${id}`));
  await page.getByRole('heading', { name: 'Timeline' }).waitFor();
  assert.equal(await page.getByRole('button', { name: 'Cancel job' }).count(), 0);
  const timeline = page.locator('ol.timeline');
  await timeline.getByText('attempt 1: TypeError: cannot read x').waitFor();
  assert.equal(
    await timeline.getByText('mailer.js').count(),
    0,
    'the stack trace is in the attempts table only',
  );
  await page.locator('pre.error-text', { hasText: 'at send (mailer.js:10:5)' }).waitFor();
  await shot(page, 'job-dead-desktop');
  await page.getByRole('button', { name: 'Delete' }).click();
  await answerDialog(page.getByRole('dialog'), 'Delete');
  await page.waitForURL('**/dead-letters?queue=crashes');
  await assert.rejects(async () => engine.getJob(id!), /does not exist/);
});

test('notices never cover the row buttons; a delete says how many jobs wait on the dead letter', async () => {
  const [a, b] = await deadLetters('notices', 2);
  await engine.enqueue({
    queue: 'notices-after',
    type: 't',
    payload: enc(''),
    dependsOn: [b!],
    onDependencyFailure: 'wait',
  });
  await page.setViewportSize(phone);
  await visit(page, url('/dead-letters?queue=notices'));
  await page.getByRole('button', { name: `Requeue job ${a}` }).click();
  await answerDialog(page.getByRole('dialog'), 'Requeue 1 dead letter');
  await page.getByText('Requeued 1 dead letter.').waitFor();
  // While the notice shows, the next row's button takes the click.
  await page.getByRole('button', { name: `Delete job ${b}` }).click({ trial: false });
  await page.getByRole('dialog').getByRole('heading', { name: 'Delete 1 dead letter?' }).waitFor();
  await page
    .getByRole('dialog')
    .getByText('1 job waits on it (onDependencyFailure: wait): it is cancelled with it.')
    .waitFor();
  await shot(page, 'notice-and-dialog-phone');
  await answerDialog(page.getByRole('dialog'), 'Cancel');
  await page.setViewportSize(desktop);
});

test('workers: who is connected, the leases each holds, and releasing a stuck one (audited)', async () => {
  const { jobId } = await engine.enqueue({ queue: 'hooks', type: 'webhook.post', payload: enc('{}') });
  const { jobs } = await call(t.client, t.client.reserve, {
    maxResponseBytes: 0,
    queues: ['hooks'],
    maxJobs: 1,
    leaseDurationMs: 600_000,
    waitTimeoutMs: 0,
    workerId: 'hook-worker-1',
  });
  assert.equal(jobs[0]?.jobId, jobId);
  await page.keyboard.press('g');
  await page.keyboard.press('w');
  await page.getByRole('heading', { name: 'Workers' }).waitFor();
  const worker = page
    .getByRole('table', { name: 'connected workers' })
    .getByRole('row', { name: /hook-worker-1/ });
  await worker.getByText('Reserve calls').waitFor();
  assert.match((await worker.getByTestId('worker-held').textContent()) ?? '', /^1 job, since /);
  await shot(page, 'workers-desktop');
  await page.getByRole('button', { name: `Release the lease of job ${jobId}` }).click();
  await page
    .getByRole('dialog')
    .getByText('the attempt counts and the job is ready for another worker')
    .waitFor();
  await answerDialog(page.getByRole('dialog'), 'Release lease');
  await page.getByText(/Lease released: job …\w+ is ready now\./).waitFor();
  assert.equal((await engine.getJob(jobId)).state, 'ready');
  const small = watch(await context.newPage(), problems);
  await small.setViewportSize(phone);
  await visit(small, url('/workers'));
  await small.getByText('hook-worker-1').waitFor();
  assert.ok((await sidewaysOverflow(small)) <= 0);
  await shot(small, 'workers-phone');
  await small.close();
  await visit(page, url('/audit?action=worker.release_lease'));
  await page.getByRole('row', { name: new RegExp(`worker.release_lease.*job:${jobId}`) }).waitFor();
});

test('dashboard: rates per queue as numbers, a window choice, the wait from due to lease; dark mode follows the system', async () => {
  await visit(page, url('/'));
  await page.getByRole('button', { name: '5 min' }).click();
  await page.waitForURL('**/?window=5m');
  const row = page.getByRole('table', { name: 'queues' }).getByRole('row', { name: /^hooks/ });
  await row.waitFor();
  assert.notEqual((await row.locator('td[data-label="Enqueued /s"]').textContent())?.trim(), '0');
  assert.notEqual((await row.locator('td[data-label="Wait avg / max"]').textContent())?.trim(), '— / —');
  assert.notEqual(
    await page.getByTestId('rate-enqueued').textContent(),
    '0',
    'the legend shows the rate unhovered',
  );
  await shot(page, 'dashboard-5m-desktop');
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.waitForTimeout(200);
  const background = await page.evaluate('getComputedStyle(document.body).backgroundColor');
  assert.equal(background, 'rgb(18, 21, 27)');
  await shot(page, 'dashboard-dark-desktop');
  await visit(page, url('/jobs?state=dead'));
  await page.getByRole('table').first().waitFor();
  const summary = (await page.locator('.list-summary').textContent()) ?? '';
  const [, count, noun] = /^([\d,]+) dead (jobs?) in all queues/.exec(summary) ?? [];
  assert.equal(noun, count === '1' ? 'job' : 'jobs', `bug: "${summary}"`);
  await shot(page, 'jobs-dead-dark-desktop');
  await page.emulateMedia({ colorScheme: 'light' });
});

test('configuration in plain units with secrets shown as the docs say; shortcuts; logout leaves the page', async () => {
  await page.keyboard.press('g');
  await page.keyboard.press('c');
  await page.getByRole('heading', { name: 'Configuration' }).waitFor();
  // Each setting under its TOML key, valued as the config file would write it (issue 24's page).
  await page.getByRole('row', { name: /admin\.session_ttl_ms\s+12h/ }).waitFor();
  await page.getByRole('row', { name: /grpc\.max_message_bytes\s+[\d.]+\s?[KMG]iB/ }).waitFor();
  await page.getByRole('row', { name: /admin\.users\[0\]\.password_hash\s+<redacted>/ }).waitFor();
  const docs = (await import('node:fs')).readFileSync(join(root, 'docs/admin.md'), 'utf8');
  assert.match(docs, /secrets shown\s+as `<redacted>`/, 'docs/admin.md says what the page shows');
  await page.keyboard.press('?');
  await page.getByRole('dialog').getByRole('heading', { name: 'Keyboard shortcuts' }).waitFor();
  await page.keyboard.press('Escape');
  await page.keyboard.press('g');
  await page.keyboard.press('d');
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  await visit(page, url('/queues'));
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByLabel('User name').waitFor();
  assert.equal(new URL(page.url()).pathname, '/login', 'bug: logging out kept the old URL');
  assert.equal(await page.title(), 'Log in · sepp', 'bug: and the old title');
  await login(page);
});

test('bug: lists refresh themselves (and on Refresh); Queues on phones keep the name beside Pause; a worker waiting on a queue with no jobs is accounted for', async () => {
  await visit(page, url('/jobs?queue=billing&state=ready'));
  const rows = page.getByRole('table').getByRole('row');
  await rows.nth(1).waitFor();
  const before = await rows.count();
  const { jobId } = await engine.enqueue({ queue: 'billing', type: 'invoice.send', payload: enc('{}') });
  await page.getByRole('link', { name: `job ${jobId}` }).waitFor({ timeout: 15_000 });
  assert.equal(await rows.count(), before + 1, 'the new job appeared without a reload');
  await page.getByRole('button', { name: 'Refresh' }).click();

  const small = watch(await context.newPage(), problems);
  await small.setViewportSize(phone);
  await visit(small, url('/queues'));
  const pause = small.getByRole('button', { name: 'Pause queue billing' });
  await pause.waitFor();
  const name = small.getByRole('rowheader').filter({ hasText: 'billing' });
  const nameBox = await name.boundingBox();
  const pauseBox = await pause.boundingBox();
  assert.ok(nameBox !== null && pauseBox !== null);
  assert.ok(nameBox.x >= 0 && nameBox.x + nameBox.width <= phone.width, 'the queue name is on screen');
  assert.ok(pauseBox.x + pauseBox.width <= phone.width, 'and so is its Pause button');
  await shot(small, 'queues-phone-names');
  await small.close();

  // A long-poll on a queue that has never had a job: counted, and said where.
  const waiting = call(t.client, t.client.reserve, {
    maxResponseBytes: 0,
    queues: ['not-yet'],
    maxJobs: 1,
    leaseDurationMs: 0,
    waitTimeoutMs: 20_000,
    workerId: 'early-bird',
  });
  await visit(page, url('/'));
  // Issue 36: the figures are defined: the total counts each reserve once, the rows only listed queues.
  await page
    .getByTestId('waiting-note')
    .filter({
      hasText: /1 reserve waiting in all, each counted once; the rows add up to 0, .*no jobs yet is in none/,
    })
    .waitFor();
  await shot(page, 'dashboard-waiting-elsewhere-desktop');
  await engine.enqueue({ queue: 'not-yet', type: 't', payload: enc('{}') });
  assert.equal((await waiting).jobs.length, 1);
  // Notices let clicks through to what is under them.
  assert.equal(
    await page.evaluate("getComputedStyle(document.querySelector('.notices')).pointerEvents"),
    'none',
  );
});

test('bug: when the server stops answering, the dashboard says stale since when, never live', async () => {
  await visit(page, url('/'));
  await page.getByTestId('live-status').filter({ hasText: 'live' }).waitFor();
  await t.dispose();
  const status = page.getByTestId('live-status');
  await status
    .filter({ hasText: /stale since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/ })
    .waitFor({ timeout: 10_000 });
  assert.doesNotMatch((await status.textContent()) ?? '', /^\s*live/);
  assert.equal(await page.locator('.is-stale').count(), 1, 'the old numbers are dimmed');
  await shot(page, 'dashboard-stale-desktop');
  // The one console error class allowed: requests to the stopped server.
  const unexpected = problems.filter((p) => !/Failed to load resource|ERR_CONNECTION_REFUSED/.test(p));
  assert.deepEqual(unexpected, []);
});
