/**
 * grpc-js's own log lines go through sepp's logger (issue 14, item 9). A
 * malformed `authorization` header — the key with a tab or a non-ASCII
 * character in it — made grpc-js print the header verbatim to stderr, key
 * included. Now the line is one of sepp's JSON lines, and the value is gone.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:http2';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { grpcLogText } from '../../src/rpc/grpc-logging.ts';
import { type ServerProcess, startServerProcess } from '../helpers/process-server.ts';
import { http2Call } from '../helpers/raw-grpc.ts';
import { registerSecret } from '../helpers/secret-log.ts';

const key = 'sk-live-7c1f0a9e5b2d4f8a9c3e';
registerSecret('api key', key);

let dir: string;
let server: ServerProcess;
before(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sepp-grpc-logs-'));
  const config = join(dir, 'sepp.toml');
  writeFileSync(config, `[[grpc.api_keys]]\nname = "ops"\nrole = "admin"\nkey = "${key}"\n`, { mode: 0o600 });
  server = await startServerProcess(join(dir, 'data'), ['--config', config]);
});
after(async () => {
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
});

/** A GetServerInfo call with a raw `authorization` value; resolves with its grpc-status. */
async function callWithAuthorization(value: string): Promise<string> {
  const session = connect(`http://127.0.0.1:${server.port}`);
  session.on('error', () => {});
  try {
    return await http2Call(session, '/sepp.v1.QueueService/GetServerInfo', {
      headers: { authorization: value },
    });
  } finally {
    session.close();
  }
}

async function loggedLine(event: string): Promise<Record<string, unknown>[]> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const lines = server
      .logs()
      .split('\n')
      .filter((l) => l.includes(`"${event}"`))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    if (lines.length > 0) return lines;
    if (Date.now() > deadline) assert.fail(`no ${event} line in 30 s:\n${server.logs()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

test('an authorization header with a tab: UNAUTHENTICATED, and the key is in no log line', async () => {
  assert.equal(await callWithAuthorization(`Bearer ${key}\tx`), '16');
  const [line] = await loggedLine('grpc.library');
  assert.match(String(line?.message), /refused the metadata entry "authorization".*value not logged/);
  assert.ok(!server.logs().includes(key), 'the key is not logged');
  assert.ok(!server.logs().includes(key.slice(0, 12)), 'not even its start');
  // Every line on stderr is one of sepp's JSON lines: nothing bypasses the logger.
  for (const l of server
    .logs()
    .split('\n')
    .filter((x) => x !== ''))
    assert.doesNotThrow(() => JSON.parse(l), l);
});

test('what grpc-js would print is scrubbed whatever the header holds', () => {
  for (const value of [
    `Bearer ${key}\t`,
    `Bearer\t${key}`,
    `Bearer ${key}é`,
    `${key}`,
    `Bearer ${key}. Note`,
  ]) {
    const text = grpcLogText([
      `Failed to add metadata entry authorization: ${value}. Metadata string value "${value}" contains illegal characters. For more information see https://github.com/grpc/grpc-node/issues/1173`,
    ]);
    assert.ok(!text.includes(key), text);
    assert.match(text, /"authorization"/);
  }
  // The call tracer (GRPC_TRACE) prints headers as JSON.
  const traced = grpcLogText([
    `Request to /x received headers {"authorization":["Bearer ${key}é"],"te":["trailers"]}`,
  ]);
  assert.ok(!traced.includes(key), traced);
  assert.match(traced, /"te":\["trailers"\]/);
});
