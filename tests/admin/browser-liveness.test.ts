/**
 * Honest liveness (issue 36, item 4), against a real `sepp serve` process
 * stopped with SIGSTOP: its port still accepts connections, nothing answers.
 * The dashboard polls every second; stated bound: it shows "stale since …"
 * at most 3 s (two poll periods, plus the one second between its checks)
 * after the last good answer; a poll never starts while one is waiting; and a
 * waiting poll is given up after 5 s (readTimeoutMs), so the next one can go.
 * The page's clock is Playwright's, moved by exactly those amounts, so a
 * loaded machine cannot make the test pass or fail by being slow (real time
 * only bounds how long the test waits for the page to draw).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { buildUi, launchBrowser, pauseSoon, shot } from '../helpers/browser.ts';
import { startServerProcess } from '../helpers/process-server.ts';

test('a server stopped by SIGSTOP shows stale within 3 s on the page clock; polls never pile up and time out', async () => {
  buildUi();
  const dir = mkdtempSync(join(tmpdir(), 'sepp-liveness-'));
  // No admin users on a loopback address: the UI is open, so the test needs no login.
  const server = await startServerProcess(join(dir, 'data'));
  const context = await launchBrowser(join(dir, 'chromium-profile'));
  const pid = server.child.pid;
  assert.ok(pid !== undefined);
  let stopped = false;
  try {
    const started = server
      .logs()
      .split('\n')
      .find((line) => line.includes('"server.started"'));
    const adminUrl = (JSON.parse(started ?? '{}') as { admin?: string }).admin;
    assert.ok(adminUrl !== undefined, 'the server says where its admin UI is');
    await context.clock.install();
    const page = context.pages()[0] ?? (await context.newPage());
    const polls: string[] = [];
    const failed: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/api/v1/overview')) polls.push(r.url());
    });
    page.on('requestfailed', (r) => {
      if (r.url().includes('/api/v1/overview')) failed.push(r.failure()?.errorText ?? '');
    });
    await page.goto(`${adminUrl}/`);
    const status = page.getByTestId('live-status');
    await status.filter({ hasText: /^\s*live$/ }).waitFor();

    process.kill(pid, 'SIGSTOP');
    stopped = true;
    // Answers already on their way arrive; after this nothing does.
    await page.waitForTimeout(500);
    await pauseSoon(page);
    const before = polls.length;
    await page.clock.runFor(3000);
    await status
      .filter({ hasText: /stale since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/ })
      .waitFor({ timeout: 10_000 });
    assert.ok(polls.length - before <= 1, `${polls.length - before} polls started while one was waiting`);
    assert.equal(await page.locator('.is-stale').count(), 1, 'the old numbers are dimmed');
    await shot(page, 'dashboard-sigstop-stale-desktop');

    // The waiting poll is given up after 5 s, and the next one starts.
    const waiting = polls.length;
    await page.clock.runFor(6000);
    await page.waitForTimeout(300);
    assert.ok(failed.length >= 1, 'the hung poll was given up');
    assert.ok(polls.length > waiting, 'and the next one started');
    assert.match((await status.textContent()) ?? '', /stale since/);

    process.kill(pid, 'SIGCONT');
    stopped = false;
    await page.clock.resume();
    await status.filter({ hasText: /^\s*live$/ }).waitFor({ timeout: 15_000 });
  } finally {
    if (stopped) process.kill(pid, 'SIGCONT');
    await context.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
