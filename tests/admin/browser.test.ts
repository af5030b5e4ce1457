/**
 * The admin UI in a real headless Chromium (Debian's chromium-headless-shell, driven by
 * playwright-core; never a downloaded browser) against a real HTTP server on port 0
 * over a real engine: log in, watch the dashboard follow new jobs, open a job,
 * requeue a dead job, pause a queue, read the audit entries. With SEPP_SCREENSHOTS=1
 * every page is photographed at desktop and phone sizes into tests/artifacts/admin/
 * (tests/helpers/browser.ts).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { BrowserContext, Page } from 'playwright-core';
import { hashPassword } from '../../src/admin/password.ts';
import { diskAssetSource } from '../../src/admin/static-assets.ts';
import type { Engine } from '../../src/engine/engine.ts';
import { testScrypt } from '../helpers/admin.ts';
import {
  answerDialog,
  buildUi,
  launchBrowser,
  phone,
  root,
  screenshotsWanted,
  shot,
  sidewaysOverflow,
  visit,
  watch as watchPage,
} from '../helpers/browser.ts';
import { registerSecret } from '../helpers/secret-log.ts';
import { call, startTestServer, type TestServer } from '../helpers/server.ts';

const user = { name: 'ops', password: 'browser-test-password' };
registerSecret('admin password', user.password);

/** Enqueues through the gRPC API, as a producer would. */
async function enqueueJobs(queue: string, count: number, type = 'send_welcome'): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const payload = Buffer.from(JSON.stringify({ to: `user${i}@example.com`, template: 'welcome', n: i }));
    const { jobId } = await call(t.client, t.client.enqueue, {
      job: {
        queue,
        type,
        payload,
        contentType: 'application/json',
        priority: 0,
        schedule: undefined,
        maxAttempts: 0,
        idempotencyKey: `${queue}-${type}-${i}`,
        metadata: { tenant: 'acme', source: 'browser-test' },
        traceparent: '',
        tracestate: '',
        uniqueWhileActive: false,
        group: '',
        dependsOn: [],
        onDependencyFailure: 0,
        timeoutMs: 0,
        debounceKey: '',
        debounceMs: 0,
        debounceMaxMs: 0,
      },
    });
    ids.push(jobId);
  }
  return ids;
}

let dir: string;
let passwordHash: string;
let engine: Engine;
let t: TestServer;
let adminUrl: string;
let context: BrowserContext;
const problems: string[] = [];

before(async () => {
  buildUi();
  dir = mkdtempSync(join(tmpdir(), 'sepp-browser-'));
  passwordHash = await hashPassword(user.password, testScrypt);
  t = await startTestServer({
    toml:
      `[[admin.users]]\nname = "${user.name}"\nrole = "admin"\npassword_hash = "${passwordHash}"\n` +
      // Completed jobs are kept, so a job page can show a result.
      '[queue_defaults]\ncompleted_retention_ms = "1h"\n',
    uiAssets: diskAssetSource(join(root, 'ui/dist')),
  });
  engine = t.server.engine;
  adminUrl = `http://127.0.0.1:${t.server.adminPort}`;
  context = await launchBrowser(join(dir, 'chromium-profile'));
  // The pages' timers run on Playwright's clock, which flows as real time does until the
  // dashboard step pauses it (below).
  await context.clock.install();
});

after(async () => {
  await context?.close();
  await t?.dispose();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const watch = (page: Page): Page => watchPage(page, problems);

test('an operator logs in, follows the dashboard, fixes jobs and reads the audit log', async () => {
  const page = watch(context.pages()[0] ?? (await context.newPage()));
  const url = (path: string) => `${adminUrl}${path}`;

  // Log in.
  await visit(page, url('/'));
  await page.getByLabel('User name').waitFor();
  await shot(page, 'login-desktop');
  await page.getByLabel('User name').fill(user.name);
  await page.getByLabel('Password').fill('wrong password');
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('alert').filter({ hasText: 'wrong user name or password' }).waitFor();
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  for (const cookie of await context.cookies()) registerSecret('session cookie', cookie.value);
  await page.getByText('No queues yet').waitFor();
  assert.equal(await page.getByTestId('total-ready').textContent(), '0');
  // The Server card names the process that answered (servers sharing one PostgreSQL differ here).
  const fact = (label: string) =>
    page.locator('.fact', { has: page.locator('dt', { hasText: label }) }).locator('dd');
  assert.equal(
    await fact('Listens on').textContent(),
    `gRPC ${t.address}, admin 127.0.0.1:${t.server.adminPort}, HTTP off`,
  );
  assert.match((await fact('Instance').textContent()) ?? '', /^[0-9a-f-]{36}, started /);
  assert.match((await fact('Host').textContent()) ?? '', /^\S+ \(pid \d+\)$/);

  // New jobs show up on the live dashboard at its next refresh (every second). The page's
  // clock is paused and then moved on by exactly one refresh interval, so what is checked is
  // "one refresh shows them", not how fast a loaded machine fetches and draws (real time
  // for that is a hang guard).
  const pausedAtMs = (await page.evaluate(() => Date.now())) + 1000;
  await page.clock.pauseAt(pausedAtMs);
  const ids = await enqueueJobs('emails', 12);
  await enqueueJobs('reports', 3, 'daily_report');
  await page.clock.runFor(1000);
  await page.getByTestId('total-ready').filter({ hasText: /^15$/ }).waitFor({ timeout: 30_000 });
  assert.equal(
    await page.evaluate(() => Date.now()),
    pausedAtMs + 1000,
    'one refresh interval passed, no more',
  );
  await page.clock.resume();

  // A worker takes three jobs; one fails for good, one is retried later, one stays leased until
  // the phone tour below. 10 min, not the default 30 s: at load 65 with SEPP_SCREENSHOTS=1 the
  // steps between took longer, the lease ended, and the job was ready again (its nack failed).
  const leased = await engine.reserve({
    queues: ['emails'],
    maxJobs: 3,
    workerId: 'worker-7',
    leaseMs: 600_000,
  });
  await engine.nack({
    jobId: leased[0]!.id,
    attempt: 1,
    error: 'SMTP 550: mailbox unavailable',
    directive: { kind: 'dead_letter' },
  });
  await engine.nack({
    jobId: leased[1]!.id,
    attempt: 1,
    error: 'connection reset by peer',
    directive: { kind: 'delay', delayMs: 600_000 },
  });
  const deadId = leased[0]!.id;
  // The next refresh now, not a second of real time later (its timer runs on the page's clock).
  await page.clock.fastForward(1000);
  await page.getByTestId('total-dead').filter({ hasText: /^1$/ }).waitFor({ timeout: 5000 });
  if (screenshotsWanted()) {
    await page.waitForTimeout(300); // let the charts draw the new points
    await shot(page, 'dashboard-desktop');
  }

  // Queues: pause emails.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Queues' }).click();
  await page.getByRole('heading', { name: 'Queues' }).waitFor();
  await page.getByRole('button', { name: 'Pause queue emails' }).click();
  await page.getByRole('button', { name: 'Resume queue emails' }).waitFor();
  assert.equal((await engine.listQueues()).find((q) => q.name === 'emails')?.paused, true);
  await shot(page, 'queues-desktop');

  // Queue detail.
  await page.getByRole('link', { name: 'emails', exact: true }).click();
  await page.getByRole('heading', { name: 'Effective settings' }).waitFor();
  await shot(page, 'queue-detail-desktop');

  // Jobs: list, then open one.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Jobs' }).click();
  await page.getByLabel('Queue', { exact: true }).selectOption('emails');
  await page.getByLabel('State', { exact: true }).selectOption('ready');
  await page.getByText('9 ready jobs in emails').waitFor();
  await shot(page, 'jobs-desktop');
  await page.getByRole('link', { name: `job ${ids[5]!}` }).click();
  await page.getByRole('heading', { name: /^Payload/ }).waitFor();
  await page.getByText('"user5@example.com"').waitFor();
  await shot(page, 'job-detail-desktop');

  // The dead job's detail, then requeue it from the dead letters page.
  await visit(page, url(`/jobs/${deadId}`));
  await page.getByText('SMTP 550: mailbox unavailable').first().waitFor();
  await shot(page, 'job-detail-dead-desktop');
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Dead letters' }).click();
  await page.getByRole('button', { name: `Requeue job ${deadId}` }).waitFor();
  await shot(page, 'dead-letters-desktop');
  await page.getByRole('button', { name: `Requeue job ${deadId}` }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByRole('heading', { name: 'Requeue 1 dead letter?' }).waitFor();
  await shot(page, 'dead-letters-confirm-desktop');
  await answerDialog(dialog, 'Requeue 1 dead letter');
  await page.getByText('No dead letters in emails').waitFor();
  assert.equal((await engine.getJob(deadId)).state, 'ready');

  // Enqueue a job through the form.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Enqueue' }).click();
  await page.getByLabel('Queue', { exact: true }).selectOption('reports');
  await page.getByLabel('Job type').fill('weekly_report');
  await page.getByLabel('Payload').fill('{"week": 49}');
  await page.getByRole('button', { name: 'Enqueue', exact: true }).click();
  await page.getByText('Enqueued job').waitFor();
  await shot(page, 'enqueue-desktop');

  // The audit log has the pause, the requeue and the enqueue, by this user.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Audit log' }).click();
  const rows = page.getByRole('row');
  await rows.filter({ hasText: 'queue.pause' }).filter({ hasText: 'queue:emails' }).waitFor();
  await rows.filter({ hasText: 'dead_letters.requeue' }).filter({ hasText: user.name }).waitFor();
  await rows.filter({ hasText: 'job.enqueue' }).waitFor();
  await shot(page, 'audit-desktop');
  await page.getByLabel('Action').selectOption('queue.pause');
  await page.getByRole('button', { name: 'Filter' }).click();
  // Every login row leaves once the filter applies (there may be more than one: .first(), not strict mode).
  await page.getByRole('row').filter({ hasText: 'session.login' }).first().waitFor({ state: 'detached' });

  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Configuration' }).click();
  const userRow = page.getByRole('row').filter({ hasText: 'admin.users[0].password_hash' });
  await userRow.filter({ hasText: '<redacted>' }).waitFor();
  await page
    .getByRole('row')
    .filter({ hasText: 'admin.session_ttl_ms' })
    .filter({ hasText: '12h' })
    .waitFor();
  await page
    .getByRole('row')
    .filter({ hasText: 'server.data_dir' })
    .filter({ hasText: '--data-dir' })
    .waitFor();
  await shot(page, 'config-desktop');

  // Purge asks for the queue's name before it does anything.
  await visit(page, url('/queues/reports'));
  await page.getByRole('button', { name: 'Purge…' }).click();
  await page.getByRole('dialog').getByLabel('Type reports to confirm').waitFor();
  assert.equal(
    await page.getByRole('dialog').getByRole('button', { name: 'Purge queue' }).isDisabled(),
    true,
  );
  await shot(page, 'purge-confirm-desktop');
  await answerDialog(page.getByRole('dialog'), 'Cancel');

  // A queue with jobs offers no delete; an empty one (here: one paused before any use) does.
  assert.equal(await page.getByRole('button', { name: 'Delete queue…' }).count(), 0);
  await engine.pauseQueue('emials', undefined, { allowMissing: true });
  await visit(page, url('/queues/emials'));
  await page.getByRole('button', { name: 'Delete queue…' }).click();
  await page.getByRole('dialog').getByText('emials holds no jobs').waitFor();
  await shot(page, 'delete-queue-confirm-desktop');
  await answerDialog(page.getByRole('dialog'), 'Delete queue');
  await page.getByRole('heading', { name: 'Queues', exact: true }).waitFor();
  await page.getByText('Deleted queue emials.').waitFor();
  assert.equal(
    (await engine.listQueues()).some((q) => q.name === 'emials'),
    false,
  );

  // Every page at phone size, with a dead letter to show.
  await engine.nack({
    jobId: leased[2]!.id,
    attempt: 1,
    error: 'template "welcome" not found',
    directive: { kind: 'dead_letter' },
  });
  const small = watch(await context.newPage());
  await small.setViewportSize(phone);
  const pages: [string, string, string][] = [
    ['dashboard', '/', 'Dashboard'],
    ['queues', '/queues', 'Queues'],
    ['queue-detail', '/queues/emails', 'Queue emails'],
    ['queue-settings', '/queues/emails/settings', 'Settings of emails'],
    ['jobs', '/jobs?queue=emails&state=ready', 'Jobs'],
    ['job-detail', `/jobs/${leased[1]!.id}`, `Job …${leased[1]!.id.slice(-8)}`],
    ['dead-letters', '/dead-letters', 'Dead letters'],
    ['enqueue', '/enqueue', 'Enqueue a job'],
    ['audit', '/audit', 'Audit log'],
    ['config', '/config', 'Configuration'],
  ];
  for (const [name, path, heading] of pages) {
    await visit(small, url(path));
    await small.getByRole('heading', { name: heading, exact: true }).waitFor();
    // Drawn with its data: no part of the page loads any more (as phone-buttons waits).
    await small.getByText('Loading…').first().waitFor({ state: 'detached' });
    const overflow = await sidewaysOverflow(small);
    assert.ok(overflow <= 0, `${name} scrolls sideways by ${overflow}px at phone width`);
    await shot(small, `${name}-phone`);
    const shown = await small.content();
    assert.ok(!shown.includes(passwordHash) && !shown.includes(user.password), `${name} shows a secret`);
    if (name === 'config')
      assert.match(shown, /&lt;redacted&gt;/, 'the configuration page shows what it hides');
  }
  await small.getByRole('button', { name: 'Log out' }).click();
  await small.getByLabel('User name').waitFor();
  await shot(small, 'login-phone');
  // Closed: an open page keeps polling its server every second (Chromium's CPU) until the file ends.
  await small.close();
  await page.close();

  // The one console error allowed is the 401 of the wrong password above.
  const unexpected = problems.filter((p) => !/401 \(Unauthorized\)/.test(p));
  assert.deepEqual(unexpected, []);
});

test('job control: cancel all matching with the count in the confirmation, cancel a running job, run all now', async () => {
  const page = watch(await context.newPage());
  const url = (path: string) => `${adminUrl}${path}`;
  await visit(page, url('/'));
  await page.getByLabel('User name').fill(user.name);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  for (const cookie of await context.cookies()) registerSecret('session cookie', cookie.value);

  await enqueueJobs('newsletters', 5, 'digest');
  await enqueueJobs('newsletters', 2, 'welcome');
  const [running] = await engine.reserve({ queues: ['newsletters'], workerId: 'worker-9', leaseMs: 600_000 });
  assert.equal(running?.type, 'digest');

  // The filtered list counts what it matches and offers to cancel it all; the confirmation asks the server
  // for the count. (A type filter matches by prefix: the phrase says so with "…".)
  await visit(page, url('/jobs?queue=newsletters&state=ready&type=digest'));
  await page.getByText(/4 jobs: ready jobs in newsletters of type digest/i).waitFor();
  await page.getByRole('button', { name: 'Cancel all matching' }).click();
  const dialog = page.getByRole('dialog');
  await dialog
    .getByRole('heading', { name: 'Cancel 4 ready jobs of type digest… in newsletters?' })
    .waitFor();
  await shot(page, 'jobs-cancel-all-confirm-desktop');
  await answerDialog(dialog, 'Cancel 4 jobs');
  await page.getByText('Cancelled 4 ready jobs of type digest… in newsletters.').waitFor();
  const counts = async () => (await engine.listQueues()).find((q) => q.name === 'newsletters')?.counts;
  assert.equal((await counts())?.cancelled, 4);
  assert.equal((await counts())?.ready, 2, 'the welcome jobs are left');

  // A running job: the cancel tells its worker, and the page says so.
  await visit(page, url(`/jobs/${running!.id}`));
  await page.getByRole('button', { name: 'Cancel job' }).click();
  await dialog.getByText('The worker running it is told to stop at once.').waitFor();
  await answerDialog(dialog, 'Cancel job');
  await page.getByText(`Cancel asked by ${user.name}`).waitFor();
  await shot(page, 'job-detail-cancel-requested-desktop');
  assert.equal((await engine.getJob(running!.id)).cancelledBy, user.name);

  // Scheduled jobs can all be run now.
  const later = await engine.enqueue({
    queue: 'newsletters',
    type: 'digest',
    payload: Buffer.from('{}'),
    delayMs: 3_600_000,
  });
  await visit(page, url('/jobs?queue=newsletters&state=scheduled'));
  await page.getByRole('button', { name: 'Run all now' }).click();
  await dialog.getByRole('heading', { name: 'Run 1 scheduled jobs in newsletters now?' }).waitFor();
  await answerDialog(dialog, 'Run 1 job now');
  await page.getByText('1 scheduled jobs in newsletters run now.').waitFor();
  assert.equal((await engine.getJob(later.jobId)).state, 'ready');

  await visit(page, url('/audit'));
  await page
    .getByRole('row')
    .filter({ hasText: 'jobs.cancel' })
    .filter({ hasText: 'queue:newsletters' })
    .waitFor();
  await page
    .getByRole('row')
    .filter({ hasText: 'job.cancel' })
    .filter({ hasText: `job:${running!.id}` })
    .waitFor();
  await shot(page, 'audit-job-control-desktop');
  // Log out, so the next test starts from the login form.
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.getByLabel('User name').waitFor();
  await page.close();
  const unexpected = problems.filter((p) => !/401 \(Unauthorized\)/.test(p));
  assert.deepEqual(unexpected, []);
});

test('flow control: a limited queue shows its limit, throttled reserves and groups; a job shows its group', async () => {
  const flow = await startTestServer({
    toml: `[[admin.users]]\nname = "${user.name}"\nrole = "admin"\npassword_hash = "${passwordHash}"\n
[queues.tenants]\nmax_leased = 2\ngroup_max_leased = 1\nrate_limit_leases = 50\n`,
    uiAssets: diskAssetSource(join(root, 'ui/dist')),
  });
  const waiting = new AbortController();
  try {
    const flowEngine = flow.server.engine;
    const job = (group: string) => ({ queue: 'tenants', type: 'sync', payload: Buffer.from('{}'), group });
    const [first] = await flowEngine.enqueueBatch(['acme', 'acme', 'globex', 'initech'].map(job));
    assert.equal(
      (await flowEngine.reserve({ queues: ['tenants'], maxJobs: 10 })).length,
      2,
      'max_leased = 2',
    );
    const throttled = flowEngine.reserve({ queues: ['tenants'], waitMs: 60_000 }, waiting.signal);
    const url = (path: string) => `http://127.0.0.1:${flow.server.adminPort}${path}`;
    const page = watch(await context.newPage());
    await visit(page, url('/queues/tenants'));
    await page.getByLabel('User name').fill(user.name);
    await page.getByLabel('Password').fill(user.password);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Flow control' }).waitFor();
    // A row's accessible name is its cells' text, space-separated.
    const row = (label: string, value: string) =>
      page.getByRole('row', { name: `${label} ${value}`, exact: true });
    await row('Leased now', '2 / 2').waitFor();
    await row('Throttled reserves', '1').waitFor({ timeout: 5000 });
    await row('Groups with ready jobs', '2').waitFor();
    await row('Per group: leased at once', '1').waitFor();
    await shot(page, 'queue-detail-flow-desktop');

    await visit(page, url('/queues'));
    await page.getByRole('row').filter({ hasText: 'tenants' }).filter({ hasText: '2 / 2' }).waitFor();

    await visit(page, url(`/jobs/${first?.ok ? first.jobId : ''}`));
    await page.locator('dl.facts dd', { hasText: /^acme$/ }).waitFor();
    await shot(page, 'job-detail-group-desktop');

    await visit(page, url('/enqueue?queue=tenants'));
    await page.getByLabel('Job type').fill('sync');
    await page.getByLabel('Group').fill('umbrella');
    await page.getByRole('button', { name: 'Enqueue', exact: true }).click();
    await page.getByText('Enqueued job').waitFor();
    assert.equal((await flowEngine.listQueues()).find((q) => q.name === 'tenants')?.readyGroups, 3);
    await page.close();
    waiting.abort();
    await throttled;
  } finally {
    waiting.abort();
    await flow.dispose();
  }
  const unexpected = problems.filter((p) => !/401 \(Unauthorized\)/.test(p));
  assert.deepEqual(unexpected, []);
});

test("an admin changes a queue's settings in the edit form: the file's message for a bad value, then saved and audited", async () => {
  const page = watch(await context.newPage());
  const url = (path: string) => `${adminUrl}${path}`;
  await visit(page, url('/'));
  await page.getByLabel('User name').fill(user.name);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  for (const cookie of await context.cookies()) registerSecret('session cookie', cookie.value);

  // From the configuration page's links to the form.
  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Configuration' }).click();
  await page.getByRole('region', { name: 'Queue settings' }).getByRole('link', { name: 'emails' }).click();
  await page.getByRole('heading', { name: 'Settings of emails' }).waitFor();
  const input = page.getByLabel('max_attempts', { exact: true });
  assert.equal(await input.inputValue(), '5');

  // A bad value: the config file's own message, and nothing changes.
  await input.fill('0');
  await page.getByLabel('backoff_base_ms', { exact: true }).fill('2s');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page
    .getByRole('alert')
    .filter({
      hasText: 'queues.emails.max_attempts: 0 is below the minimum 1; set a number between 1 and 1000',
    })
    .waitFor();
  await shot(page, 'queue-settings-invalid-desktop');
  assert.equal((await engine.listQueues()).find((q) => q.name === 'emails')?.settings.backoff.baseMs, 1000);

  // A good value: saved, shown as a run-time override with the file's value beside it.
  await input.fill('12');
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByText('Saved max_attempts, backoff_base_ms on emails.').waitFor();
  const row = page.getByRole('row').filter({ has: page.getByLabel('max_attempts', { exact: true }) });
  await row.getByText('run-time override').waitFor();
  await shot(page, 'queue-settings-saved-desktop');
  const emails = (await engine.listQueues()).find((q) => q.name === 'emails');
  assert.equal(emails?.settings.maxAttempts, 12);
  assert.equal(emails?.settings.backoff.baseMs, 2000);

  // The audit log has it, with the old and the new value.
  await visit(page, url('/audit?action=queue.settings.set'));
  const entry = page
    .getByRole('row')
    .filter({ hasText: 'queue.settings.set' })
    .filter({ hasText: 'queue:emails' });
  await entry.filter({ hasText: 'max_attempts 5 → 12' }).filter({ hasText: 'default → override' }).waitFor();
  await entry.filter({ hasText: user.name }).waitFor();
  await shot(page, 'audit-settings-desktop');

  // Reset gives the file's value back.
  await visit(page, url('/queues/emails/settings'));
  await page.getByRole('checkbox', { name: 'reset max_attempts to 5' }).check();
  await page.getByRole('button', { name: 'Save changes' }).click();
  await page.getByText('Saved max_attempts on emails.').waitFor();
  await row.getByText('built-in default').waitFor();
  assert.equal((await engine.listQueues()).find((q) => q.name === 'emails')?.settings.maxAttempts, 5);
  await page.close();
  assert.deepEqual(
    problems.filter((p) => !/401 \(Unauthorized\)|400 \(Bad Request\)/.test(p)),
    [],
  );
});

test('the job page follows a running job’s progress live, then shows its result', async () => {
  // Only what this page logs: the test before leaves its own problems in the shared list.
  const seenBefore = problems.length;
  // The test before stays logged in; this one starts from the login form.
  await context.clearCookies();
  const page = watch(await context.newPage());
  await visit(page, `${adminUrl}/`);
  await page.getByLabel('User name').fill(user.name);
  await page.getByLabel('Password').fill(user.password);
  await page.getByRole('button', { name: 'Log in' }).click();
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
  for (const cookie of await context.cookies()) registerSecret('session cookie', cookie.value);

  const [id] = await enqueueJobs('kept', 1, 'render_report');
  const [lease] = await engine.reserve({ queues: ['kept'], workerId: 'render-1' });
  assert.equal(lease?.id, id);
  const jobId = id!;
  await engine.reportProgress({ jobId, attempt: 1, percent: 25, json: '{"step":"fetch"}' });
  await visit(page, `${adminUrl}/jobs/${jobId}`);
  const bar = page.getByRole('progressbar');
  await bar.waitFor();
  assert.equal(await bar.getAttribute('aria-valuenow'), '25');

  // The page reads an unfinished job again every second: a new report shows up without a reload.
  await engine.reportProgress({ jobId, attempt: 1, percent: 80, json: '{"step":"render","pages":12}' });
  // The page's next read now, not a second of real time later (its timer runs on the page's clock).
  await page.clock.fastForward(1000);
  await page.locator('[role=progressbar][aria-valuenow="80"]').waitFor({ timeout: 5000 });
  await page.getByText('"pages": 12').waitFor();
  if (screenshotsWanted()) {
    await page.waitForTimeout(500); // the bar's width transition, for the picture
    await shot(page, 'job-detail-progress-desktop');
  }

  await engine.ack({
    jobId,
    attempt: 1,
    result: Buffer.from(JSON.stringify({ url: 'https://files.example.com/report-49.pdf', pages: 12 })),
    resultContentType: 'application/json',
  });
  await page.clock.fastForward(1000);
  await page.getByRole('heading', { name: /^Result/ }).waitFor({ timeout: 5000 });
  await page.getByText('"https://files.example.com/report-49.pdf"').waitFor();
  await page.getByText('Completed').first().waitFor();
  await shot(page, 'job-detail-result-desktop');
  await page.close();
  const unexpected = problems.slice(seenBefore).filter((p) => !/401 \(Unauthorized\)/.test(p));
  assert.deepEqual(unexpected, []);
});
