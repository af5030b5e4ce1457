/**
 * A push queue's page in the admin UI, in Debian's headless Chromium against
 * a real server pushing to a real receiver: the Push delivery card shows the
 * endpoint (without its credentials), the counts, the latency and the last
 * error with its job; a queue that does not push has no such card.
 * Screenshot (SEPP_SCREENSHOTS=1) in tests/artifacts/admin/ (queue-push-desktop).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import type { Page } from 'playwright-core';
import { logIn, shot, startUiServer, type UiServer, visit, watch } from '../helpers/browser.ts';
import { type Receiver, startReceiver } from '../helpers/push-receiver.ts';
import { registerSecret } from '../helpers/secret-log.ts';

const user = { name: 'watcher', password: 'push-browser-password', role: 'viewer' } as const;
const secret = 'browser-push-secret-93b1d0';
registerSecret('push signing secret', secret);

let ui: UiServer;
let receiver: Receiver;
let page: Page;
let dir: string;
const problems: string[] = [];

before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sepp-ui-push-'));
  writeFileSync(join(dir, 'secret'), secret);
  receiver = await startReceiver(secret, (d, res) => {
    const failing = JSON.stringify(d.json.payload).includes('fail');
    res.writeHead(failing ? 500 : 200, { 'content-type': 'text/plain' });
    res.end(failing ? 'mailbox unavailable' : 'ok');
  });
  const url = receiver.url.replace('http://', 'http://robot:hunter2@');
  ui = await startUiServer(
    user,
    `[queues.hooks]\nmax_attempts = 1\n[queues.hooks.push]\nurl = "${url}"\nsecret_file = "${join(dir, 'secret')}"\nallow_private_targets = true\n`,
  );
  const { engine } = ui.t.server;
  await engine.enqueue({
    queue: 'hooks',
    type: 't',
    payload: Buffer.from('{"ok":1}'),
    contentType: 'application/json',
  });
  await engine.enqueue({
    queue: 'hooks',
    type: 't',
    payload: Buffer.from('{"fail":1}'),
    contentType: 'application/json',
  });
  await engine.enqueue({ queue: 'plain', type: 't', payload: Buffer.from('{}') });
  await receiver.waitFor(2);
  page = watch(ui.context.pages()[0] ?? (await ui.context.newPage()), problems);
  await logIn(page, `${ui.adminUrl}/`, user);
  await page.getByRole('heading', { name: 'Dashboard' }).waitFor();
});

after(async () => {
  await ui?.dispose();
  await receiver?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("a push queue's page shows its endpoint, counts, latency and last error; another queue's does not", async () => {
  await visit(page, `${ui.adminUrl}/queues/hooks`);
  const card = page.locator('section.card', { has: page.getByRole('heading', { name: 'Push delivery' }) });
  await card.waitFor();
  await card.getByText('mailbox unavailable', { exact: false }).waitFor();
  const text = (await card.textContent()) ?? '';
  assert.ok(text.includes(receiver.url), text);
  assert.ok(!text.includes('hunter2'), 'the URL is shown without its password');
  assert.match(text, /Delivered\s*1/);
  assert.match(text, /Failed attempts\s*1/);
  assert.match(text, /p50 .*p95 .*max/);
  assert.match(text, /HTTP 500 from .*: mailbox unavailable/);
  await shot(page, 'queue-push-desktop');

  await visit(page, `${ui.adminUrl}/queues/plain`);
  await page.getByRole('heading', { name: 'Effective settings' }).waitFor();
  assert.equal(await page.getByRole('heading', { name: 'Push delivery' }).count(), 0);
  assert.deepEqual(problems, []);
});
