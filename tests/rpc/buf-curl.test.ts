/**
 * `buf curl` (npm @bufbuild/buf), a generic gRPC client that knows nothing of sepp,
 * works against a real server through reflection: every `npx buf curl` line that
 * docs/protocol.md shows is run here as printed, against a server with API keys
 * (the address, the key and the job id are filled in).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { repoRoot } from '../helpers/cli.ts';
import { apiKeysToml, startTestServer, type TestServer } from '../helpers/server.ts';

const run = promisify(execFile);
const buf = join(repoRoot, 'node_modules', '.bin', 'buf');
const producerKey = 'buf-curl-producer-key-0123456789abcdef';

let t: TestServer;
before(async () => {
  t = await startTestServer({ toml: apiKeysToml([{ name: 'tools', role: 'producer', key: producerKey }]) });
});
after(() => t.dispose());

/** The doc's `npx buf curl` lines, each split into its arguments (after `npx buf`). */
function documentedLines(): string[][] {
  const doc = readFileSync(join(repoRoot, 'docs', 'protocol.md'), 'utf8');
  return doc
    .split('\n')
    .filter((line) => line.startsWith('    npx buf curl '))
    .map((line) => shellWords(line.trim()).slice(2));
}

/** Words of a command line with single- and double-quoted strings (enough for the doc's lines). */
function shellWords(line: string): string[] {
  const words: string[] = [];
  const pattern = /'([^']*)'|"([^"]*)"|(\S+)/g;
  for (let m = pattern.exec(line); m !== null; m = pattern.exec(line)) words.push(m[1] ?? m[2] ?? m[3] ?? '');
  return words;
}

async function bufCurl(args: string[], jobId: string): Promise<string> {
  const filled = args.map((arg) =>
    arg
      .replace('http://127.0.0.1:50051', `http://${t.address}`)
      .replace('$SEPP_API_KEY', producerKey)
      .replace('JOB_ID', jobId),
  );
  const { stdout } = await run(buf, filled, { timeout: 30_000 });
  return stdout;
}

test('every buf curl line of docs/protocol.md runs against a server with keys', async () => {
  const lines = documentedLines();
  assert.equal(lines.length, 5, 'docs/protocol.md shows five buf curl lines');
  const [services, methods, health, enqueue, getJob] = lines as [
    string[],
    string[],
    string[],
    string[],
    string[],
  ];

  const listed = (await bufCurl(services, '')).trim().split('\n');
  for (const name of [
    'sepp.v1.QueueService',
    'grpc.health.v1.Health',
    'grpc.reflection.v1.ServerReflection',
  ]) {
    assert.ok(listed.includes(name), `--list-services: ${listed.join(', ')}`);
  }
  const methodNames = (await bufCurl(methods, '')).trim().split('\n');
  for (const name of [
    'sepp.v1.QueueService/Enqueue',
    'sepp.v1.QueueService/GetJob',
    'sepp.v1.QueueService/Work',
  ]) {
    assert.ok(methodNames.includes(name), `--list-methods lacks ${name}`);
  }
  assert.deepEqual(JSON.parse(await bufCurl(health, '')), { status: 'SERVING' });

  const enqueued = JSON.parse(await bufCurl(enqueue, '')) as { jobId: string };
  assert.match(enqueued.jobId, /^[0-9a-f-]{36}$/);
  const job = JSON.parse(await bufCurl(getJob, enqueued.jobId)) as {
    job: { jobId: string; queue: string; type: string; state: string; payload: string; contentType: string };
  };
  assert.equal(job.job.jobId, enqueued.jobId);
  assert.equal(job.job.queue, 'emails');
  assert.equal(job.job.state, 'JOB_STATE_READY');
  assert.deepEqual(JSON.parse(Buffer.from(job.job.payload, 'base64').toString()), { to: 'a@example.com' });
});

test('buf curl without the key is refused UNAUTHENTICATED (exit code = gRPC code << 3)', async () => {
  const enqueue = documentedLines()[3]!.filter((arg, i, all) => arg !== '-H' && all[i - 1] !== '-H');
  await assert.rejects(bufCurl(enqueue, ''), (error: { code?: number; stderr?: string }) => {
    assert.equal(error.code, 16 << 3);
    assert.match(error.stderr ?? '', /unauthenticated/i);
    return true;
  });
});
