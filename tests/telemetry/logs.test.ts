/**
 * Log lines: JSON that parses, with time, level, event and fields; one debug
 * line per RPC naming the caller's key (never the key); warnings for risky
 * settings at startup; and no secret in any line, whatever a field holds.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Metadata } from '@grpc/grpc-js';
import { exampleConfig } from '../../src/config/index.ts';
import { createLogger, scrubSecrets } from '../../src/telemetry/logger.ts';
import { call, startTestServer, testJob } from '../helpers/server.ts';

interface Line {
  time: string;
  level: string;
  event: string;
  [field: string]: unknown;
}

const job = testJob('logs');

describe('the logger', () => {
  test('JSON lines carry time, level, event and the fields, and skip undefined ones', () => {
    const lines: string[] = [];
    const logger = createLogger({
      level: 'info',
      format: 'json',
      write: (l) => lines.push(l),
      nowMs: () => Date.UTC(2026, 5, 1, 12, 0, 0),
    });
    logger.debug('not.written');
    logger.info('queue.paused', { queue: 'emails', jobs: 3, paused: true, missing: undefined, event: 'x' });
    assert.equal(lines.length, 1);
    assert.deepEqual(JSON.parse(lines[0]!), {
      time: '2026-06-01T12:00:00.000Z',
      level: 'info',
      event: 'queue.paused',
      queue: 'emails',
      jobs: 3,
      paused: true,
      field_event: 'x',
    });
  });

  test('text lines put time, level and event first, then key=value', () => {
    const lines: string[] = [];
    const logger = createLogger({
      level: 'debug',
      format: 'text',
      write: (l) => lines.push(l),
      nowMs: () => 0,
    });
    logger.warn('config.risky', { setting: 'server.durability', detail: 'two words' });
    assert.equal(
      lines[0],
      '1970-01-01T00:00:00.000Z WARN  config.risky setting=server.durability detail="two words"',
    );
  });

  test('secrets never reach a line: secret-named fields, bearer tokens, URL credentials', () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'debug', format: 'json', write: (l) => lines.push(l) });
    logger.error('x', {
      password: 'hunter2',
      api_key: 'k-123',
      csrfToken: 'c-321',
      keySha256: 'd-654',
      passwordHash: 'h-987',
      sessionCookie: 's-111',
      authorization: 'Bearer k-456',
      error: 'POST https://otel:tok-789@collector.example/v1/traces failed; header Bearer k-999 refused',
    });
    const text = lines.join('\n');
    for (const secret of [
      'hunter2',
      'k-123',
      'k-456',
      'tok-789',
      'k-999',
      'c-321',
      'd-654',
      'h-987',
      's-111',
    ])
      assert.ok(!text.includes(secret), secret);
    const line = JSON.parse(lines[0]!) as Line;
    assert.equal(line.password, '<redacted>');
    assert.equal(
      line.error,
      'POST https://<redacted>@collector.example/v1/traces failed; header Bearer <redacted> refused',
    );
    assert.equal(scrubSecrets('nothing to hide here'), 'nothing to hide here');
  });
});

describe('server logs', () => {
  test('startup warnings, one debug line per RPC with the caller key name, and no secret anywhere', async () => {
    const key = 'producer-key-0123456789abcdef';
    // The example config's hash: a valid one, no scrypt run needed.
    const adminHash = /password_hash = "([^"]+)"/.exec(exampleConfig)?.[1] ?? '';
    const otlpSecret = 's3cret-collector-token';
    const lines: string[] = [];
    const logger = createLogger({ level: 'debug', format: 'json', write: (l) => lines.push(l) });
    const t = await startTestServer({
      logger,
      toml: `
[server]
durability = "relaxed"
[[grpc.api_keys]]
name = "billing"
role = "producer"
key = "${key}"
[[admin.users]]
name = "alice"
role = "admin"
password_hash = "${adminHash}"
[telemetry]
# Nothing listens on port 9: exports fail, and the failure is logged without the credentials.
otlp_endpoint = "http://sepp:${otlpSecret}@127.0.0.1:9"
`,
    });
    const md = new Metadata();
    md.set('authorization', `Bearer ${key}`);
    await call(t.client, t.client.enqueue, { job }, md);
    const bad = new Metadata();
    bad.set('authorization', 'Bearer not-a-valid-key-at-all');
    await assert.rejects(call(t.client, t.client.enqueue, { job }, bad));
    await t.dispose();

    const parsed = lines.map((l) => JSON.parse(l) as Line);
    for (const line of parsed) {
      assert.match(line.time, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      assert.ok(['debug', 'info', 'warn', 'error'].includes(line.level), line.level);
      assert.match(line.event, /^[a-z_]+(\.[a-z_]+)+$/);
    }
    const events = (name: string) => parsed.filter((l) => l.event === name);

    assert.ok(
      events('config.risky').some((l) => l.level === 'warn' && l.setting === 'server.durability'),
      'relaxed durability is warned about',
    );
    const [started] = events('server.started');
    assert.equal(started?.otlp, '127.0.0.1:9', 'the collector host only');
    // Each port says how it authenticates: API keys on gRPC, users on the admin port.
    assert.deepEqual(
      [started?.grpc_auth, started?.grpc_tls, started?.admin_auth, started?.admin_tls],
      ['api_keys', false, 'users', false],
    );

    const calls = events('rpc.call');
    assert.equal(calls.length, 2);
    assert.deepEqual(
      calls.map((l) => [l.level, l.method, l.status, l.caller]),
      [
        ['debug', 'Enqueue', 'OK', 'billing'],
        ['debug', 'Enqueue', 'UNAUTHENTICATED', undefined],
      ],
    );
    for (const l of calls) assert.equal(typeof l.duration_ms, 'number');

    const all = lines.join('\n');
    for (const secret of [key, 'not-a-valid-key-at-all', otlpSecret]) {
      assert.ok(!all.includes(secret), `a log line contains ${secret}`);
    }
  });
});
