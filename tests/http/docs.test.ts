/**
 * docs/http.md, run: the producer's curl lines and the outcome wait against a
 * real server, the ten-line shell worker (curl and jq) until it has acked and
 * nacked real jobs, the events command, and the Node and Python signature
 * checks against a real push delivery. The tables are checked too: every
 * error code with its status, every operation with its path.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { requestTooLargeStatus } from '../../src/api-schema/error-status.ts';
import { parseConfigText } from '../../src/config/index.ts';
import { httpStatusOf } from '../../src/http/errors.ts';
import { openApiDocument } from '../../src/http/index.ts';
import { type Delivery, startReceiver } from '../helpers/push-receiver.ts';
import { registerSecret } from '../helpers/secret-log.ts';
import { apiKeysToml, startTestServer, type TestServer, waitersReach } from '../helpers/server.ts';

const docs = readFileSync(new URL('../../docs/http.md', import.meta.url), 'utf8');
const docAddress = 'http://127.0.0.1:8080';
const producerKey = 'billing-producer-key-0123456789';
const workerKey = 'mailer-worker-key-0123456789';

/** The code block after `<!-- http.md#name -->`. */
function block(name: string): string {
  const match = new RegExp(`<!-- http\\.md#${name} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\`\`\``).exec(docs);
  assert.ok(match?.[1] !== undefined, `docs/http.md has a block ${name}`);
  return match[1];
}

/** The JSON lines the docs show after the block `name` (its output). */
function shownOutput(name: string): string[] {
  const match = new RegExp(`<!-- http\\.md#${name} -->[\\s\\S]*?\`\`\`json\\n([\\s\\S]*?)\`\`\``).exec(docs);
  assert.ok(match?.[1] !== undefined, `docs/http.md shows the output of ${name}`);
  return match[1].trim().split('\n');
}

/** A JSON value's shape: its fields in order, the shape of an array's first item, a leaf's type. */
function shape(value: unknown): unknown {
  if (Array.isArray(value)) return [shape(value[0])];
  if (typeof value === 'object' && value !== null) {
    return Object.entries(value).map(([key, item]) => [key, shape(item)]);
  }
  return typeof value;
}

/** Runs a script with bash (asynchronously: the server under test runs in this process). */
async function bash(script: string): Promise<string> {
  const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
  assert.equal(code, 0, `${script}\n${stdout}\n${stderr}`);
  return stdout;
}

describe('docs/http.md', () => {
  let t: TestServer;
  let url: string;
  let dir: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sepp-http-docs-'));
    t = await startTestServer({
      http: true,
      toml: `${apiKeysToml([
        { name: 'billing', role: 'producer', key: producerKey },
        { name: 'mailer', role: 'worker', key: workerKey },
      ])}[queues.emails]\ncompleted_retention_ms = "1h"\nbackoff_base_ms = "1h"\n`,
    });
    url = t.httpUrl;
  });
  after(async () => {
    await t?.dispose();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  test('the producer: one job, then a batch; every answer as shown', async () => {
    const script = block('producer').replace(docAddress, url);
    const lines = (await bash(script)).trim().split('\n');
    assert.equal(lines.length, 2, lines.join('\n'));
    const one = JSON.parse(lines[0] ?? '') as { jobId: string; deduplicated: boolean };
    assert.match(one.jobId, /^[0-9a-f-]{36}$/);
    assert.equal(one.deduplicated, false);
    const batch = JSON.parse(lines[1] ?? '') as { results: { accepted: { jobId: string } }[] };
    assert.equal(batch.results.length, 2);
    assert.ok(batch.results.every((r) => r.accepted.jobId.length === 36));
    // Each answer has the fields the docs show, in their order.
    assert.deepEqual(
      lines.map((line) => shape(JSON.parse(line))),
      shownOutput('producer').map((line) => shape(JSON.parse(line))),
    );
  });

  test('the workflows: a flow by name, a sealed batch and the list of them, every answer as shown', async () => {
    const script = `SEPP=${url}\nKEY=${producerKey}\n${block('flow')}`;
    const lines = (await bash(script)).trim().split('\n');
    assert.deepEqual(lines, ['[true,["extract","load"]]', '["sealed",1]', '[1,"billing",null]']);
    const shown = /<!-- http\.md#flow -->[\s\S]*?```json\n([\s\S]*?)```/.exec(docs)?.[1];
    assert.equal(shown?.trim(), lines.join('\n'));
  });

  test('reading a job and waiting for its outcome, which a worker completes meanwhile', async () => {
    const { jobId } = await t.server.engine.enqueue({
      queue: 'outcomes',
      type: 'welcome',
      payload: Buffer.from('{"to":"x@example.com"}'),
      contentType: 'application/json',
    });
    const script = `SEPP=${url}\nKEY=${producerKey}\nJOB=${jobId}\n${block('outcome')}`;
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
    // The outcome wait is open (a subscriber), then a worker finishes the job with a result.
    const subscribers = t.server.engine.eventBacklog.subscribers;
    for (let i = 0; i < 100_000 && t.server.engine.eventBacklog.subscribers === subscribers; i++) {
      await new Promise((r) => setTimeout(r, 5));
    }
    const [leased] = await t.server.engine.reserve({ queues: ['outcomes'] });
    assert.equal(leased?.id, jobId);
    await t.server.engine.ack({
      jobId: leased.id,
      attempt: leased.attempt,
      result: Buffer.from('{"messageId":"<x@example.com>"}'),
      resultContentType: 'application/json',
    });
    assert.equal(await exited, 0, out);
    const [state, outcome] = out.trim().split('\n');
    assert.equal(state, '"ready"');
    const [shownState, shownOutcome] = shownOutput('outcome');
    assert.equal(state, shownState);
    assert.deepEqual(shape(JSON.parse(outcome ?? '')), shape(JSON.parse(shownOutcome ?? '')));
    const parsed = JSON.parse(outcome ?? '') as { finished: boolean; state: string; result: unknown };
    assert.deepEqual(
      [parsed.finished, parsed.state, parsed.result],
      [true, 'completed', { messageId: '<x@example.com>' }],
    );
  });

  test('the shell worker acks the jobs its handler finishes and nacks the one it fails', async () => {
    const worker = join(dir, 'worker.sh');
    writeFileSync(worker, block('worker'));
    chmodSync(worker, 0o755);
    const handled = join(dir, 'handled.txt');
    writeFileSync(
      join(dir, 'handle-job'),
      `#!/bin/sh\npayload=$(cat)\necho "$payload" >> ${handled}\ncase "$payload" in *fail*) exit 1 ;; esac\n`,
    );
    chmodSync(join(dir, 'handle-job'), 0o755);
    const ids: string[] = [];
    for (const payload of [
      '{"to":"a@example.com"}',
      '{"to":"b@example.com","fail":true}',
      '{"to":"c@example.com"}',
    ]) {
      const { jobId } = await t.server.engine.enqueue({
        queue: 'emails',
        type: 'welcome',
        payload: Buffer.from(payload),
        contentType: 'application/json',
      });
      ids.push(jobId);
    }
    let child: ChildProcess | undefined;
    try {
      // Its own process group, so that stopping it stops the curl of a long-poll too.
      child = spawn(worker, [], {
        cwd: dir,
        env: { ...process.env, SEPP: url, SEPP_KEY: workerKey },
        stdio: 'ignore',
        detached: true,
      });
      const deadline = Date.now() + 30_000;
      const states = async () => Promise.all(ids.map(async (id) => (await t.server.engine.getJob(id)).state));
      while (Date.now() < deadline) {
        const now = await states();
        if (now[0] === 'completed' && now[1] === 'scheduled' && now[2] === 'completed') break;
        await new Promise((r) => setTimeout(r, 50));
      }
      assert.deepEqual(await states(), ['completed', 'scheduled', 'completed']);
      const failed = await t.server.engine.getJob(ids[1] ?? '');
      assert.equal(failed.lastError, 'handle-job failed');
      const seen = readFileSync(handled, 'utf8');
      for (const to of ['a@example.com', 'b@example.com', 'c@example.com']) assert.ok(seen.includes(to), to);
      assert.ok(block('worker').trim().split('\n').length <= 11, 'ten lines and the #! line');
    } finally {
      if (child?.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
      // The next tests lease from 'emails' too: the failed job waiting for its retry leaves, and
      // the stopped worker's long-poll is gone from the server before they start (on a loaded
      // machine its closed connection can reach the server after the next enqueue otherwise,
      // and the job goes to it: the fresh clone of c16348f7 met exactly that).
      await t.server.engine.cancel(ids[1] ?? '').catch(() => undefined); // cleanup: the test's own failure stays the one told
      await waitersReach(t, 0); // the stopped worker's long-poll
    }
  });

  test('the events command streams Server-Sent Events', async () => {
    const script = `SEPP=${url}\nKEY=${producerKey}\n${block('events')}`;
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    const ended = new Promise<void>((resolve) => {
      child.stdout.on('data', (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes('event: caught_up')) resolve();
      });
    });
    await ended;
    assert.match(out, /^retry: 1000\n\nid: [0-9a-f]+:\d+\nevent: caught_up\ndata: \{"streamId"/);
    // A job completed with a result arrives as the event shown: an id, and data with the same fields in order.
    const completed = new Promise<string>((resolve) => {
      child.stdout.on('data', () => {
        const event = /\n(id: [^\n]+\ndata: \{"sequence"[^\n]*"kind":"completed"[^\n]*)\n/.exec(out);
        if (event?.[1] !== undefined) resolve(event[1]);
      });
    });
    await t.server.engine.enqueue({ queue: 'emails', type: 'welcome', payload: Buffer.from('{}') });
    const [leased] = await t.server.engine.reserve({ queues: ['emails'] });
    assert.ok(leased !== undefined);
    await t.server.engine.ack({
      jobId: leased.id,
      attempt: leased.attempt,
      result: Buffer.from('{"ok":true}'),
      resultContentType: 'application/json',
    });
    const [idLine, dataLine] = (await completed).split('\n');
    child.kill('SIGTERM');
    const [shownId, shownData] = block('event').trim().split('\n');
    const fieldsOf = (line: string | undefined) =>
      Object.keys(JSON.parse((line ?? '').slice('data: '.length)));
    assert.match(idLine ?? '', /^id: [0-9a-f]{16}:\d+$/);
    assert.match(shownId ?? '', /^id: [0-9a-f]{16}:\d+$/);
    assert.deepEqual(fieldsOf(dataLine), fieldsOf(shownData));
  });

  test('the error shown is what a stale attempt gets, in the same shape and words', async () => {
    const { jobId } = await t.server.engine.enqueue({ queue: 'fence', type: 't', payload: Buffer.alloc(0) });
    const [leased] = await t.server.engine.reserve({ queues: ['fence'] });
    assert.equal(leased?.id, jobId);
    const answer = await bash(
      `curl -sS -H 'Authorization: Bearer ${workerKey}' -H 'Content-Type: application/json' ` +
        `-d '{"attempt": ${leased.attempt + 1}}' ${url}/v1/jobs/${jobId}/ack`,
    );
    // The same sentence but for the job id and the attempts.
    const template = (text: string) =>
      text
        .trim()
        .replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, 'ID')
        .replace(/\d+/g, 'N');
    assert.equal(template(JSON.stringify(JSON.parse(block('error')))), template(answer));
  });

  test('every config block is a valid sepp.toml', () => {
    const blocks = [...docs.matchAll(/```toml\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
    assert.equal(blocks.length, 2, 'the listen address and a push target');
    for (const text of blocks) {
      const checked = parseConfigText(text);
      assert.ok(checked.ok, `${text}\n${JSON.stringify(checked.ok ? null : checked.problems)}`);
    }
  });

  test('every error code is in the table with its status, and every operation with its path', () => {
    for (const [code, status] of Object.entries(httpStatusOf)) {
      assert.match(docs, new RegExp(`\\| \`${code}\`\\s+\\| ${status}\\s+\\|`), code);
    }
    assert.match(docs, new RegExp(`\\| \`resource_exhausted\`\\s+\\| ${requestTooLargeStatus}\\s+\\|`));
    const doc = openApiDocument('x') as { paths: Record<string, Record<string, unknown>> };
    for (const [path, operations] of Object.entries(doc.paths)) {
      for (const method of Object.keys(operations)) {
        assert.ok(docs.includes(`\`${method.toUpperCase()} ${path}\``), `${method} ${path}`);
      }
    }
  });
});

describe('docs/http.md: checking a push signature', () => {
  const secret = 'docs-push-secret-62f0c1a9e8';
  registerSecret('push signing secret', secret);
  let delivery: Delivery;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'sepp-http-sig-'));
    const receiver = await startReceiver(secret);
    const t = await startTestServer({
      env: { PUSH_SECRET: secret },
      toml: `[queues.sig.push]\nurl = "${receiver.url}"\nsecret_env = "PUSH_SECRET"\nallow_private_targets = true\n`,
    });
    try {
      await t.server.engine.enqueue({
        queue: 'sig',
        type: 't',
        payload: Buffer.from('{"n": 1}'),
        contentType: 'application/json',
      });
      await receiver.waitFor(1);
      delivery = receiver.deliveries[0]!;
    } finally {
      await t.dispose();
      await receiver.close();
    }
    writeFileSync(join(dir, 'body'), delivery.body);
    writeFileSync(join(dir, 'tampered'), Buffer.concat([delivery.body, Buffer.from(' ')]));
  });
  after(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const cases = () => {
    const header = String(delivery.headers['sepp-signature']);
    const t = Number(/t=(\d+)/.exec(header)?.[1]);
    return [
      { file: 'body', header, secret, now: t, want: true },
      { file: 'tampered', header, secret, now: t, want: false },
      { file: 'body', header, secret: `${secret}x`, now: t, want: false },
      { file: 'body', header, secret, now: t + 301, want: false },
      { file: 'body', header: `t=${t}`, secret, now: t, want: false },
      { file: 'body', header: 'v1', secret, now: t, want: false },
    ];
  };

  test('its list of what the request carries names every field of the real delivery', () => {
    const list = /\*\*The request\*\*: ([\s\S]*?), and the headers/.exec(docs)?.[1];
    assert.ok(list, 'docs/http.md describes the push request');
    const named = new Set([...list.matchAll(/`(\w+)`/g)].map((m) => m[1]));
    const fields = Object.keys(delivery.json);
    assert.ok(fields.includes('jobId') && fields.includes('leaseToken'), fields.join(', '));
    assert.deepEqual(
      fields.filter((f) => !named.has(f)),
      [],
      'docs/http.md names each field',
    );
  });

  test('the Node snippet accepts the real delivery and refuses a changed body, secret or an old timestamp', () => {
    writeFileSync(join(dir, 'verify.mjs'), block('verify-node'));
    const script = `
      import { readFileSync } from 'node:fs';
      import { verifySepp } from './verify.mjs';
      for (const c of JSON.parse(process.argv[2])) {
        console.log(verifySepp(c.secret, c.header, readFileSync(c.file), c.now));
      }`;
    writeFileSync(join(dir, 'run.mjs'), script);
    const run = spawnSync(process.execPath, ['run.mjs', JSON.stringify(cases())], {
      cwd: dir,
      encoding: 'utf8',
    });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(
      run.stdout.trim().split('\n'),
      cases().map((c) => String(c.want)),
    );
  });

  test('the Python snippet does the same', () => {
    const script = `${block('verify-python')}
import json, sys
for c in json.loads(sys.argv[1]):
    with open(c["file"], "rb") as f:
        print(verify_sepp(c["secret"].encode(), c["header"], f.read(), c["now"]))
`;
    writeFileSync(join(dir, 'verify.py'), script);
    const run = spawnSync('/usr/bin/python3', ['verify.py', JSON.stringify(cases())], {
      cwd: dir,
      encoding: 'utf8',
    });
    assert.equal(run.status, 0, run.stderr);
    assert.deepEqual(
      run.stdout.trim().split('\n'),
      cases().map((c) => (c.want ? 'True' : 'False')),
    );
  });
});
