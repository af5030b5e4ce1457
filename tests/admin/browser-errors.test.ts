/**
 * Why jobs fail, in the admin UI (issue 36, item 2), in Debian's headless Chromium
 * against a real server: the job page shows each failed attempt's class and stack;
 * the dead letters page groups a queue's dead letters by class and first line ("top
 * errors") with counts and first/last failure; a group is requeued as one counted,
 * confirmed, audited bulk operation; the view fits a 375 px phone in both colour
 * schemes; markup in what producers and workers write (payload, metadata, key, worker id,
 * progress, error, class, stack) is shown as text on the job, dead letters and search pages.
 * Screenshots (SEPP_SCREENSHOTS=1): tests/artifacts/admin/errors-*.png.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { FakeClock } from '../../src/engine/clock.ts';
import type { Engine } from '../../src/engine/engine.ts';
import { enc } from '../helpers/admin.ts';
import {
  answerDialog,
  logIn,
  phone,
  shot,
  sidewaysOverflow,
  startUiServer,
  type UiServer,
  visit,
  watch,
} from '../helpers/browser.ts';

const user = { name: 'errors', password: 'errors-browser-password', role: 'admin' } as const;
const wide = { width: 1440, height: 900 };
const stack = (i: number) =>
  `TypeError: Cannot read properties of undefined (reading 'amount')\n    at charge (/srv/billing/charge.js:${40 + i}:17)\n    at run (/srv/billing/worker.js:12:9)`;

let ui: UiServer;
let engine: Engine;
let clock: FakeClock;
let page: Page;
let twiceFailed = '';
const problems: string[] = [];
const url = (path: string) => `${ui.adminUrl}${path}`;

/** One delivery of `jobId`, failed as the SDK reports a thrown error. */
async function fail(jobId: string, error: string, errorClass?: string, trace?: string, dead = true) {
  const [job] = await engine.reserve({ queues: ['billing'], maxJobs: 1 });
  assert.equal(job?.id, jobId);
  clock.advance(5_000);
  await engine.nack({
    jobId,
    attempt: job.attempt,
    error,
    ...(errorClass === undefined ? {} : { errorClass }),
    ...(trace === undefined ? {} : { stack: trace }),
    directive: dead ? { kind: 'dead_letter' } : { kind: 'delay', delayMs: 0 },
  });
}

before(async () => {
  clock = new FakeClock(Date.now() - 3_600_000);
  ui = await startUiServer(user, '[queues.billing]\n', { clock });
  engine = ui.t.server.engine;
  for (let i = 0; i < 3; i++) {
    const { jobId } = await engine.enqueue({ queue: 'billing', type: 'charge', payload: enc('{}') });
    // The first one fails twice: a timeout first, then the TypeError that sends it to the dead letters.
    if (i === 0) {
      twiceFailed = jobId;
      await fail(
        jobId,
        'gateway timed out after 30 s',
        'TimeoutError',
        'TimeoutError: gateway timed out after 30 s\n    at post (/srv/billing/gateway.js:88:11)',
        false,
      );
    }
    await fail(jobId, "Cannot read properties of undefined (reading 'amount')", 'TypeError', stack(i));
  }
  for (let i = 0; i < 2; i++) {
    const { jobId } = await engine.enqueue({ queue: 'billing', type: 'refund', payload: enc('{}') });
    await fail(jobId, `gateway said 502\nrequest ${i} of the refund run`);
  }
  page = watch(ui.context.pages()[0] ?? (await ui.context.newPage()), problems);
  await page.setViewportSize(wide);
  await logIn(page, url('/'), user);
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
});
after(() => ui?.dispose());

test('the job page shows each failed attempt’s class and its stack', async () => {
  await visit(page, url(`/jobs/${twiceFailed}`));
  const errors = page.getByRole('region', { name: 'Attempts with errors' });
  await errors.waitFor();
  const rows = errors.getByRole('row');
  assert.equal(await rows.count(), 3, 'a header and two attempts');
  const first = rows.nth(1);
  await first.getByText('TimeoutError', { exact: true }).waitFor();
  const second = rows.nth(2);
  await second.getByText('TypeError', { exact: true }).waitFor();
  // The stack is folded until asked for.
  const trace = second.getByText('at charge (/srv/billing/charge.js:40:17)', { exact: false });
  assert.equal(await trace.isVisible(), false);
  await second.getByText('Stack of attempt 2').click();
  await trace.waitFor();
  assert.equal(await sidewaysOverflow(page), 0);
  await errors.scrollIntoViewIfNeeded();
  await shot(page, 'errors-job-attempts-desktop');
  assert.deepEqual(problems, []);
});

test('top errors groups the dead letters; a group is requeued as one counted, audited act', async () => {
  await visit(page, url('/dead-letters?queue=billing'));
  const top = page.getByRole('table', { name: 'top errors of billing' });
  await top.waitFor();
  const groups = top.getByRole('row');
  assert.equal(await groups.count(), 3, 'a header and two groups');
  const typeError = groups.filter({ hasText: 'TypeError' });
  assert.deepEqual((await typeError.getByRole('cell').allTextContents()).slice(0, 1), ['3']);
  await typeError.getByText("Cannot read properties of undefined (reading 'amount')").waitFor();
  const noClass = groups.filter({ hasText: 'gateway said 502' });
  await noClass.getByText('no class').waitFor();
  assert.ok(!(await noClass.textContent())?.includes('request 0'), 'grouped by the first line only');
  assert.equal(await sidewaysOverflow(page), 0);
  await shot(page, 'errors-top-errors-desktop');

  await typeError.getByRole('button', { name: /^Choose TypeError/ }).click();
  const chosen = page.getByTestId('top-errors-chosen');
  await chosen.getByText('TypeError', { exact: true }).waitFor();
  await chosen.getByRole('button', { name: 'Requeue all matching' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByText('3 jobs match.', { exact: false }).waitFor();
  await shot(page, 'errors-top-errors-confirm-desktop');
  await answerDialog(dialog, 'Requeue 3 jobs');
  await page
    .getByText(/Requeued 3 dead jobs with error TypeError/)
    .first()
    .waitFor();
  await top.getByRole('row').filter({ hasText: 'TypeError' }).waitFor({ state: 'detached' });
  const [billing] = (await engine.listQueues()).filter((q) => q.name === 'billing');
  assert.deepEqual([billing?.counts.ready, billing?.counts.dead], [3, 2]);
  const audit = (await engine.listAudit({ action: 'jobs.requeue' })).items;
  assert.equal(audit.length, 1, 'one audit entry for the group');
  assert.match(JSON.stringify(audit[0]?.details), /TypeError/);
  assert.deepEqual(problems, []);
});

test('on a phone, light and dark, the top errors and their buttons fit 375 px', async () => {
  await page.setViewportSize(phone);
  await visit(page, url('/dead-letters?queue=billing'));
  const top = page.getByRole('table', { name: 'top errors of billing' });
  await top.waitFor();
  await top.getByRole('button', { name: /^Choose the group “gateway said 502”/ }).click();
  const button = page.getByTestId('top-errors-chosen').getByRole('button', { name: 'Delete all matching' });
  await button.waitFor();
  const box = await button.boundingBox();
  assert.ok(
    box !== null && box.x >= 0 && box.x + box.width <= phone.width,
    `button inside the screen: ${JSON.stringify(box)}`,
  );
  assert.equal(await sidewaysOverflow(page), 0);
  await page.getByRole('heading', { name: /Top errors/ }).scrollIntoViewIfNeeded();
  await shot(page, 'errors-top-errors-phone');
  await page.emulateMedia({ colorScheme: 'dark' });
  await shot(page, 'errors-top-errors-dark-phone');
  await page.emulateMedia({ colorScheme: 'light' });
  assert.deepEqual(problems, []);
});

test('markup a producer or a worker wrote is shown as text, never run (attack7)', async () => {
  // In every field a job carries to the job page: payload, metadata, idempotency key, worker id,
  // progress, error, its class and its stack.
  const markup = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>';
  const { jobId } = await engine.enqueue({
    queue: 'hostile',
    type: 't',
    payload: enc(JSON.stringify({ note: markup })),
    contentType: 'application/json',
    metadata: { note: markup },
    idempotencyKey: markup,
  });
  const [job] = await engine.reserve({ queues: ['hostile'], maxJobs: 1, workerId: markup });
  assert.equal(job?.id, jobId);
  await engine.reportProgress({ jobId, attempt: job.attempt, json: JSON.stringify({ step: markup }) });
  await engine.nack({
    jobId,
    attempt: job.attempt,
    error: markup,
    errorClass: markup.slice(0, 60),
    stack: markup,
    directive: { kind: 'dead_letter' },
  });
  for (const path of [
    `/jobs/${jobId}`,
    '/dead-letters?queue=hostile',
    `/search?q=${encodeURIComponent(markup)}`,
  ]) {
    await page.goto(url(path));
    await page.getByText('window.__pwned=2', { exact: false }).first().waitFor();
    assert.equal(await page.evaluate(() => '__pwned' in globalThis), false, path);
    assert.equal(await page.locator('main img[src="x"], main script').count(), 0, path);
  }
  assert.deepEqual(problems, []);
});
