/**
 * The database's files deleted or replaced under a running server (issue 29,
 * item 8). Before, `rm sepp.db-wal` went unnoticed: SQLite kept committing
 * into the deleted file, and a kill -9 lost every acknowledged job in it.
 * Now the server notices (once a second, and at every readiness probe),
 * checkpoints what the lost WAL holds into sepp.db, refuses writes with a
 * message that says what happened and what to do, logs it as an ERROR and
 * reports not ready; after a kill -9 every acknowledged job is there.
 * When sepp.db itself is replaced, the server saves the database it still
 * holds open as a new file beside it, which an operator puts in place.
 */
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readdirSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { SeppClient, SeppError } from '../../clients/typescript/src/index.ts';
import { inspectDataDir } from '../helpers/inspect-data-dir.ts';
import { bundleServer, type ServerProcess, startServerProcess } from '../helpers/process-server.ts';

let bundle: ReturnType<typeof bundleServer>;
before(() => {
  bundle = bundleServer();
});
after(() => bundle.dispose());

/** The admin URL from the server's start line (json logs). */
function adminUrl(server: ServerProcess): string {
  const line = server
    .logs()
    .split('\n')
    .find((l) => l.includes('"server.started"'));
  return (JSON.parse(line ?? '{}') as { admin: string }).admin;
}

/** Enqueues until one is refused (at most 15 s: the check runs once a second); returns the ids acknowledged and the refusal. */
async function enqueueUntilRefused(client: SeppClient): Promise<{ ids: string[]; refusal: SeppError }> {
  const ids: string[] = [];
  const deadline = Date.now() + 15_000;
  for (let n = 0; Date.now() < deadline; n++) {
    try {
      ids.push((await client.enqueue('lost', 'after', Buffer.from(`after ${n}`))).id);
    } catch (error) {
      assert.ok(error instanceof SeppError, String(error));
      return { ids, refusal: error };
    }
    await sleep(20);
  }
  assert.fail('enqueues still accepted 15 s after the file was deleted');
}

test('the WAL deleted under a running server: writes refused, not ready, nothing acknowledged lost across kill -9', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-lost-wal-'));
  const server = await startServerProcess(dataDir, [], { bundle: bundle.bundle });
  const client = SeppClient.connect(`127.0.0.1:${server.port}`, { transport: 'unary' });
  try {
    const acknowledged: string[] = [];
    for (let n = 0; n < 100; n++)
      acknowledged.push((await client.enqueue('lost', 'before', Buffer.from(`before ${n}`))).id);
    const ready = await fetch(`${adminUrl(server)}/readyz`);
    assert.equal(ready.status, 200);

    rmSync(join(dataDir, 'sepp.db-wal'));
    const { ids, refusal } = await enqueueUntilRefused(client);
    acknowledged.push(...ids);
    assert.equal(refusal.code, 'unavailable', refusal.message);
    assert.match(
      refusal.message,
      /write-ahead log \(WAL\) .*sepp\.db-wal was deleted or replaced while sepp ran/,
    );
    assert.match(refusal.message, /writes are refused from now on/);
    assert.match(refusal.message, /copied into the database file/);
    assert.match(refusal.message, /Restart sepp/);
    // Every write is refused from now on, not only enqueues; reads still work.
    const again = await client.enqueue('lost', 'again').catch((error: unknown) => error);
    assert.ok(again instanceof SeppError && again.code === 'unavailable');
    assert.equal((await client.getJob(acknowledged[0]!)).state, 'ready');

    const notReady = await fetch(`${adminUrl(server)}/readyz`);
    assert.equal(notReady.status, 503);
    assert.match(await notReady.text(), /sepp\.db-wal was deleted or replaced/);
    const errors = server
      .logs()
      .split('\n')
      .filter((l) => l.includes('"storage.files_lost"'));
    assert.equal(errors.length, 1, 'one ERROR line, however many writes are refused');
    assert.match(errors[0]!, /"level":"error"/);

    assert.equal(await server.stop('SIGKILL'), null);
    const after = inspectDataDir(dataDir);
    assert.equal(after.integrity, 'ok');
    assert.deepEqual(after.counterMismatches, []);
    const missing = acknowledged.filter((id) => !after.rows.has(id));
    assert.deepEqual(missing, [], `${missing.length} of ${acknowledged.length} acknowledged jobs lost`);

    // A restart makes a new WAL and writes again.
    const restarted = await startServerProcess(dataDir, [], { bundle: bundle.bundle });
    const client2 = SeppClient.connect(`127.0.0.1:${restarted.port}`, { transport: 'unary' });
    try {
      await client2.enqueue('lost', 'restarted');
      assert.equal((await fetch(`${adminUrl(restarted)}/readyz`)).status, 200);
    } finally {
      client2.close();
      await restarted.stop();
    }
  } finally {
    client.close();
    await server.stop('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});

test('sepp.db replaced under a running server: writes refused, and the live data saved beside it', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'sepp-lost-db-'));
  const server = await startServerProcess(dataDir, [], { bundle: bundle.bundle });
  const client = SeppClient.connect(`127.0.0.1:${server.port}`, { transport: 'unary' });
  try {
    const acknowledged: string[] = [];
    for (let n = 0; n < 20; n++)
      acknowledged.push((await client.enqueue('lost', 'before', Buffer.from(`before ${n}`))).id);
    // An operator "restores" an old copy over the live file.
    const old = join(dataDir, 'old-copy.db');
    copyFileSync(join(dataDir, 'sepp.db'), old);
    renameSync(old, join(dataDir, 'sepp.db'));

    const { ids, refusal } = await enqueueUntilRefused(client);
    acknowledged.push(...ids);
    assert.equal(refusal.code, 'unavailable');
    assert.match(
      refusal.message,
      /the database file .*sepp\.db was deleted or replaced while sepp ran \(it is now inode/,
    );
    assert.match(refusal.message, /sepp is saving it as .*sepp-rescued-\d+\.db/);
    assert.equal((await fetch(`${adminUrl(server)}/readyz`)).status, 503);
    const deadline = Date.now() + 15_000;
    while (!server.logs().includes('"storage.files_rescued"')) {
      if (Date.now() > deadline) assert.fail(`no storage.files_rescued line: ${server.logs()}`);
      await sleep(50);
    }
    const rescued = readdirSync(dataDir).find((f) => /^sepp-rescued-\d+\.db$/.test(f));
    assert.ok(rescued !== undefined);
    await server.stop('SIGKILL');
    // The operator's step: the rescued copy goes in place of the file that replaced the live one.
    renameSync(join(dataDir, rescued), join(dataDir, 'sepp.db'));
    rmSync(join(dataDir, 'sepp.db-wal'), { force: true });
    const after = inspectDataDir(dataDir);
    assert.equal(after.integrity, 'ok');
    const missing = acknowledged.filter((id) => !after.rows.has(id));
    assert.deepEqual(missing, [], `${missing.length} of ${acknowledged.length} acknowledged jobs lost`);
  } finally {
    client.close();
    await server.stop('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  }
});
