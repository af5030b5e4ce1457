/**
 * The quickstart is what the examples run: each code block of
 * docs/quickstart.md equals the marked region of its example file, and both
 * examples run as documented against a real server.
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { SeppClient } from '../../clients/typescript/src/index.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const root = join(import.meta.dirname, '..', '..');
const read = (path: string) => readFileSync(join(root, path), 'utf8');

function region(path: string, name: string): string {
  const match = new RegExp(`// #region ${name}\\n([\\s\\S]*?)// #endregion ${name}`).exec(read(path));
  assert.ok(match?.[1], `${path} has no region ${name}`);
  return match[1];
}

describe('docs/quickstart.md', () => {
  test('each code block is the marked region of its example, and together they are at most 20 lines', () => {
    const blocks = [...read('docs/quickstart.md').matchAll(/<!-- (\S+)#(\S+) -->\n```ts\n([\s\S]*?)```/g)];
    assert.deepEqual(
      blocks.map((b) => b[1]),
      ['examples/producer.ts', 'examples/worker.ts'],
    );
    let lines = 0;
    for (const [, path, name, code] of blocks) {
      assert.equal(code, region(path!, name!), `the quickstart's copy of ${path} is out of date`);
      lines += code!.split('\n').filter((l) => l.trim() !== '').length;
    }
    assert.ok(lines <= 20, `the quickstart has ${lines} lines of code`);
  });
});

describe('examples', () => {
  let t: TestServer;
  before(async () => {
    t = await startTestServer();
  });
  after(() => t.dispose());

  test('the producer enqueues, the worker runs the jobs and stops cleanly on Ctrl-C', async () => {
    const env = { ...process.env, SEPP_SERVER: t.address };
    const worker = spawn(process.execPath, ['--import', 'tsx', 'examples/worker.ts'], { cwd: root, env });
    let workerOut = '';
    const sent = new Promise<void>((resolve) => {
      worker.stdout.on('data', (chunk: Buffer) => {
        workerOut += chunk.toString();
        if (
          workerOut.includes('sending to ada@example.com') &&
          workerOut.includes('sending to grace@example.com')
        ) {
          resolve();
        }
      });
    });
    const exited = new Promise<number | null>((resolve) => worker.on('exit', resolve));

    const producerOut = await new Promise<string>((resolve, reject) => {
      execFile(
        process.execPath,
        ['--import', 'tsx', 'examples/producer.ts'],
        { cwd: root, env },
        (error, stdout) => (error ? reject(error) : resolve(stdout)),
      );
    });
    assert.match(producerOut, /^enqueued \S+ for ada@example\.com\nenqueued \S+ for grace@example\.com\n$/);

    await sent;
    const client = SeppClient.connect(t.address);
    try {
      // Both jobs were acked: nothing is left on the queue.
      for (;;) {
        const emails = (await client.listQueues()).find((q) => q.name === 'emails');
        if (emails !== undefined && emails.counts.ready + emails.counts.leased === 0) break;
        await new Promise((r) => setImmediate(r));
      }
    } finally {
      await client.close();
    }
    worker.kill('SIGINT');
    assert.equal(await exited, 0, 'the worker exits 0 after Ctrl-C');
  });
});
