/**
 * The admin API's answer to a limit (admin/http-errors.ts, its onError): a request over a
 * per-call limit, which no retry can pass, is 413 without Retry-After; a limit reached for
 * now is 429 with it. (The one admin route that can meet a per-call limit, cancelling a flow
 * of more than 20,000 jobs, would cost seconds to set up: the mapping is checked on its own.)
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Hono } from 'hono';
import { toErrorResponse } from '../../src/admin/http-errors.ts';
import { SeppError } from '../../src/engine/errors.ts';

test('a request over a per-call limit is 413 without Retry-After; a limit for now is 429 with it', async () => {
  const app = new Hono();
  app.onError((error, c) => toErrorResponse(c, error).response);
  app.post('/too-large', () => {
    throw SeppError.tooLarge('the flow of job j has more than 20000 jobs; cancel its jobs in several calls');
  });
  app.post('/for-now', () => {
    throw new SeppError('resource_exhausted', 'too many long-polls are waiting; retry with backoff');
  });
  const tooLarge = await app.request('/too-large', { method: 'POST' });
  assert.equal(tooLarge.status, 413);
  assert.equal(tooLarge.headers.get('retry-after'), null);
  assert.deepEqual(await tooLarge.json(), {
    error: {
      code: 'resource_exhausted',
      message: 'the flow of job j has more than 20000 jobs; cancel its jobs in several calls',
    },
  });
  const forNow = await app.request('/for-now', { method: 'POST' });
  assert.equal(forNow.status, 429);
  assert.equal(forNow.headers.get('retry-after'), '1');
});
