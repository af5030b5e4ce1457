/**
 * The flow and batch pages (issue 33) in Debian's headless Chromium against a real
 * server: a job's page links the jobs it waits on and those that wait on it and its
 * flow; the flow page draws every job coloured by state (a wide fan-out as eight
 * boxes and a "+N more"), a click goes to the job, and an operator cancels the flow;
 * the batch page shows its counts, bar and members, and an operator cancels it, which
 * ends it and runs its on-complete job. Desktop, phone and dark:
 * tests/artifacts/admin/workflow-*.png (the flow and batch pages at desktop and phone size
 * always, the other states with SEPP_SCREENSHOTS=1).
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import type { Engine } from '../../src/engine/engine.ts';
import type { FlowJob } from '../../src/engine/types.ts';
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

const user = { name: 'flows', password: 'flows-browser-password', role: 'operator' } as const;

let ui: UiServer;
let engine: Engine;
let page: Page;
const problems: string[] = [];
const url = (path: string) => `${ui.adminUrl}${path}`;
let ids: Record<string, string> = {};

async function settle(jobId: string, outcome: 'ack' | 'dead'): Promise<void> {
  const { queue } = await engine.getJob(jobId);
  const leased = await engine.reserve({ queues: [queue], maxJobs: 1 });
  assert.equal(leased[0]?.id, jobId);
  if (outcome === 'ack') await engine.ack({ jobId, attempt: leased[0]!.attempt });
  else
    await engine.nack({
      jobId,
      attempt: leased[0]!.attempt,
      error: 'bad row',
      directive: { kind: 'dead_letter' },
    });
}

before(async () => {
  ui = await startUiServer(
    user,
    '[queues.extract]\ncompleted_retention_ms = 3600000\n[queues.transform]\ncompleted_retention_ms = 3600000\n',
  );
  engine = ui.t.server.engine;
  // An ETL flow: extract, three transforms (one fails; the report runs anyway), load, report.
  const job = (name: string, queue: string, after: string[] = [], extra: Partial<FlowJob> = {}): FlowJob => ({
    name,
    after,
    queue,
    type: queue,
    payload: enc('{}'),
    ...extra,
  });
  const flow = await engine.enqueueFlow([
    job('extract', 'extract'),
    job('transform-a', 'transform', ['extract']),
    job('transform-b', 'transform', ['extract']),
    job('transform-c', 'transform', ['extract']),
    job('load', 'load', ['transform-a', 'transform-b', 'transform-c'], { onDependencyFailure: 'wait' }),
    job('report', 'report', ['load']),
  ]);
  assert.ok(flow.committed);
  ids = Object.fromEntries(flow.jobs.map((j) => [j.name, j.jobId]));
  await settle(ids.extract!, 'ack');
  await settle(ids['transform-a']!, 'ack');
  await settle(ids['transform-b']!, 'dead');
  page = watch(ui.context.pages()[0] ?? (await ui.context.newPage()), problems);
  await logIn(page, url('/'), user);
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
});
after(() => ui?.dispose());

test('the dashboard and the queue page count the jobs waiting on dependencies', async () => {
  await visit(page, url('/'));
  // load and report wait; the dashboard's per-queue column of reserves is named apart.
  await page.getByTestId('total-waiting').filter({ hasText: /^2$/ }).waitFor({ timeout: 5000 });
  await page.getByRole('columnheader', { name: 'Reserves waiting' }).waitFor();
  await visit(page, url('/queues'));
  const loadRow = page
    .getByRole('row')
    .filter({ has: page.getByRole('link', { name: 'load', exact: true }) });
  assert.equal(
    await loadRow.locator('[data-label="Waiting"]').textContent(),
    '1',
    'the Queues page counts the waiting job of load',
  );
  await visit(page, url('/queues/load'));
  const waiting = page.locator('a.total-waiting');
  await waiting.filter({ hasText: /^1waiting$/ }).waitFor({ timeout: 5000 });
  assert.equal(await waiting.getAttribute('href'), '/jobs?queue=load&state=waiting');
  assert.deepEqual(problems, []);
});

test("a job's page links what it waits on, what waits on it, and its flow", async () => {
  await visit(page, url(`/jobs/${ids.load}`));
  const card = page.locator('section').filter({ has: page.getByRole('heading', { name: 'Workflow' }) });
  await card.waitFor();
  const waitsOn = card.getByRole('table', { name: 'jobs it waits on' }).getByRole('row');
  assert.equal(await waitsOn.count(), 3);
  assert.match((await waitsOn.nth(1).textContent()) ?? '', /transform-b.*dead.*pending/);
  assert.equal(await card.getByRole('table', { name: 'jobs waiting on it' }).getByRole('row').count(), 1);
  await shot(page, 'workflow-job-desktop');
  await card.getByRole('link', { name: 'Show the flow' }).click();
  await page.waitForURL(/\/flows\//);
  await page.getByRole('heading', { name: /^Flow of job/ }).waitFor();
  assert.deepEqual(problems, []);
});

test('the flow page draws every job by state; a click goes to the job', async () => {
  const nodes = page.getByTestId('flow-node');
  await nodes.first().waitFor();
  assert.equal(await nodes.count(), 6);
  const states = await Promise.all((await nodes.all()).map((n) => n.getAttribute('data-state')));
  assert.deepEqual(states, ['completed', 'completed', 'dead', 'ready', 'waiting', 'waiting']);
  // The three transforms share a type: each box is titled by its name in the flow.
  assert.equal(await nodes.nth(2).textContent(), 'transform-btransform · dead');
  const counts = (await page.getByRole('list', { name: 'jobs by state' }).textContent()) ?? '';
  assert.match(counts, /waiting 2.*ready 1.*completed 2.*dead 1/);
  const table = page.getByRole('table', { name: "the flow's jobs" });
  const report = table.getByRole('row').filter({ hasText: 'report' });
  assert.match((await report.textContent()) ?? '', /waiting.*load/);
  // The final job's name, which no edge carries, is kept with the job.
  assert.equal(await report.locator('td[data-label="Name"]').textContent(), 'report');
  assert.equal(await sidewaysOverflow(page), 0);
  await shot(page, 'workflow-flow-desktop');
  await page.emulateMedia({ colorScheme: 'dark' });
  await shot(page, 'workflow-flow-dark-desktop');
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize(phone);
  assert.equal(await sidewaysOverflow(page), 0);
  await shot(page, 'workflow-flow-phone');
  await page.setViewportSize({ width: 1280, height: 800 });

  await page.getByRole('link', { name: /^transform-b dead job/ }).click();
  await page.waitForURL(new RegExp(`/jobs/${ids['transform-b']}$`));
  await page.getByRole('heading', { name: /^Job/ }).first().waitFor();
  assert.deepEqual(problems, []);
});

test('a wide fan-out draws eight boxes and a count of the rest', async () => {
  const children = Array.from({ length: 40 }, (_, i) => ({
    name: `part-${i}`,
    after: ['split'],
    queue: 'parts',
    type: 'part',
    payload: enc('{}'),
  }));
  const flow = await engine.enqueueFlow([
    { name: 'split', queue: 'split', type: 'split', payload: enc('{}') },
    ...children,
    { name: 'sum', after: children.map((c) => c.name), queue: 'sum', type: 'sum', payload: enc('{}') },
  ]);
  assert.ok(flow.committed);
  const sum = flow.jobs.find((j) => j.name === 'sum')!.jobId;
  await visit(page, url(`/flows/${sum}`));
  await page.getByTestId('flow-more').waitFor();
  assert.equal(await page.getByTestId('flow-node').count(), 1 + 8 + 1);
  assert.match((await page.getByTestId('flow-more').textContent()) ?? '', /\+32 more/);
  assert.match((await page.getByRole('heading', { name: /jobs/ }).first().textContent()) ?? '', /42 jobs/);
  const table = page.getByRole('table', { name: "the flow's jobs" });
  assert.match(
    (await table.getByRole('row').filter({ hasText: 'sum' }).textContent()) ?? '',
    /part-0, part-1, part-2, part-3, part-4 and 35 more/,
  );
  await shot(page, 'workflow-fan-out-desktop');
  assert.deepEqual(problems, []);
});

test('an operator cancels a flow: every job not ended, in one act', async () => {
  await visit(page, url(`/flows/${ids.report}`));
  await page.getByTestId('flow-node').first().waitFor();
  await page.getByRole('button', { name: 'Cancel flow' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByRole('heading', { name: 'Cancel this flow?' }).waitFor();
  await answerDialog(dialog, 'Cancel flow');
  await page
    .getByText(/3 cancelled/)
    .first()
    .waitFor();
  await page.locator('[data-testid="flow-node"][data-state="cancelled"]').nth(2).waitFor();
  assert.equal(await page.locator('[data-testid="flow-node"][data-state="cancelled"]').count(), 3);
  assert.equal(await page.getByRole('button', { name: 'Cancel flow' }).count(), 0);
  const [entry] = (await engine.listAudit({ pageSize: 1 })).items;
  assert.deepEqual([entry?.action, entry?.actor], ['flow.cancel', 'flows']);
  assert.deepEqual(problems, []);
});

test('the batch page: counts, bar and members; an operator cancels it and it ends', async () => {
  const { batch, results } = await engine.createBatch({
    onComplete: { queue: 'callbacks', type: 'import-done', payload: enc('{}') },
    onSuccess: { queue: 'callbacks', type: 'import-ok', payload: enc('{}') },
    onDeath: { queue: 'callbacks', type: 'import-failed', payload: enc('{}') },
    jobs: Array.from({ length: 8 }, (_, i) => ({
      queue: `rows-${i}`,
      type: 'import-row',
      payload: enc('{}'),
    })),
    seal: true,
  });
  const members = results.map((r) => (r.ok ? r.jobId : ''));
  for (const id of members.slice(0, 3)) await settle(id, 'ack');
  await settle(members[3]!, 'dead');
  await visit(page, url(`/batches/${batch.id}`));
  await page.getByTestId('batch-ended').waitFor();
  assert.equal(await page.getByTestId('batch-ended').textContent(), '4 of 8 ended');
  const outcomes = (await page.getByRole('list', { name: 'members by outcome' }).textContent()) ?? '';
  assert.match(outcomes, /pending 4.*completed 3.*dead 1.*cancelled 0/);
  const rows = page.getByRole('table', { name: "the batch's members" }).getByRole('row');
  assert.equal(await rows.count(), 9);
  assert.match((await rows.nth(4).textContent()) ?? '', /dead/);
  // The first death enqueued on_death at once: both it and the member are links.
  const died = (await engine.getBatch(batch.id)).batch;
  const facts = page.locator('.facts');
  assert.match((await facts.textContent()) ?? '', /On death.*First dead/);
  assert.equal(await facts.getByRole('link', { name: /^job / }).count(), 2, 'on death, first dead');
  assert.equal(died.firstDeadId, members[3]);
  assert.equal(await sidewaysOverflow(page), 0);
  await shot(page, 'workflow-batch-desktop');
  await page.setViewportSize(phone);
  assert.equal(await sidewaysOverflow(page), 0);
  await shot(page, 'workflow-batch-phone');
  await page.emulateMedia({ colorScheme: 'dark' });
  await shot(page, 'workflow-batch-dark-phone');
  await page.emulateMedia({ colorScheme: 'light' });
  await page.setViewportSize({ width: 1280, height: 800 });

  await page.getByRole('button', { name: 'Cancel batch' }).click();
  const dialog = page.getByRole('dialog');
  await dialog.getByRole('heading', { name: 'Cancel this batch?' }).waitFor();
  await answerDialog(dialog, 'Cancel batch');
  await page
    .getByText(/4 cancelled/)
    .first()
    .waitFor();
  await page.locator('.badge-batch-ended').waitFor();
  assert.equal(await page.getByTestId('batch-ended').textContent(), '8 of 8 ended');
  // The on-complete job ran (a link to it); on-success did not: not every member completed.
  assert.equal(
    await facts.getByRole('link', { name: /^job / }).count(),
    3,
    'on complete, on death, first dead',
  );
  assert.match((await facts.textContent()) ?? '', /not run: not every member completed/);
  await shot(page, 'workflow-batch-ended-desktop');
  const [entry] = (await engine.listAudit({ pageSize: 1 })).items;
  assert.deepEqual([entry?.action, entry?.target], ['batch.cancel', `batch:${batch.id}`]);
  assert.deepEqual(problems, []);
});
