/**
 * Events turned off (`limits.max_event_subscribers = 0`) is an operator's decision, not a load
 * that passes: both doors say so without inviting a retry — gRPC's Events UNAVAILABLE with
 * `sepp-retry: operator`, the HTTP API's event stream 503 without Retry-After — and the SDK's
 * subscription stops on it instead of reconnecting, also one that was up when the server came
 * back with events off. The Python SDK's test is in clients/python/tests/test_events_off.py.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type ServiceError, status } from '@grpc/grpc-js';
import { SeppClient, SeppError } from '../../clients/typescript/src/index.ts';
import { openSse } from '../helpers/http-api.ts';
import { startTestServer } from '../helpers/server.ts';

const off = '[limits]\nmax_event_subscribers = 0\n';

test('events turned off: gRPC UNAVAILABLE with sepp-retry operator, HTTP 503 without Retry-After', async () => {
  const t = await startTestServer({ toml: off, http: true });
  try {
    const call = t.client.events({
      queues: [],
      jobIds: [],
      kinds: [],
      allKinds: false,
      fromOldest: false,
      afterSequence: 0,
      streamId: '',
    });
    const error = await new Promise<ServiceError>((resolve) => {
      call.on('error', resolve);
      call.on('data', () => assert.fail('an event from a server with events off'));
    });
    assert.equal(error.code, status.UNAVAILABLE);
    assert.match(
      error.details,
      /^events are turned off on this server \(limits\.max_event_subscribers = 0\)/,
    );
    assert.deepEqual(error.metadata.get('sepp-retry'), ['operator']);
    assert.deepEqual(error.metadata.get('sepp-error-code'), ['unavailable']);

    const stream = await openSse(t.httpUrl, '/v1/events');
    assert.equal(stream.status, 503);
    assert.equal(stream.headers['retry-after'], undefined, 'no Retry-After: no repeat helps');
    const body = JSON.parse(await stream.body()) as { error: { code: string; message: string } };
    assert.equal(body.error.code, 'unavailable');
    assert.match(body.error.message, /events are turned off on this server/);

    // An SDK's wait for an outcome subscribes too: it fails with the refusal, not retrying.
    const client = SeppClient.connect(t.address);
    try {
      const { id } = await client.enqueue('q', 't');
      const waited = await client.waitFor(id).catch((e: unknown) => e);
      assert.ok(waited instanceof SeppError, String(waited));
      assert.equal(waited.retry, 'operator');
    } finally {
      await client.close();
    }
  } finally {
    await t.dispose();
  }
});

test('SDK: a subscription that was up stops when the server comes back with events off', async () => {
  let t = await startTestServer();
  const client = SeppClient.connect(t.address);
  try {
    const subscription = client.events({ queues: ['q'] });
    await subscription.caughtUp;
    t.writeConfig(off);
    t = await t.restartOnSamePort();
    const ended = await (async () => {
      for await (const _ of subscription) assert.fail('an event from a server with events off');
      return undefined;
    })().catch((e: unknown) => e);
    assert.ok(ended instanceof SeppError, String(ended));
    assert.equal(ended.grpcCode, status.UNAVAILABLE);
    assert.equal(ended.retry, 'operator');
    assert.match(ended.message, /events are turned off on this server/);
  } finally {
    await client.close();
    await t.dispose();
  }
});
