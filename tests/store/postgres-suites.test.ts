/**
 * rpc and client tests that reach the store through every kind of write — unary
 * calls, the Produce and Work streams, long-polls, idempotency keys, job control,
 * results and progress, the SDK's Worker and its prefetch, the undone lease of a Reserve
 * whose answer nobody read, a Work stream nobody reads, a lease given back — run again on the
 * PostgreSQL store
 * (issue 37). All of them run on PostgreSQL with
 *
 *     SEPP_TEST_STORE=postgres node scripts/run-tests.mjs tests/rpc tests/client
 *
 * (tests/helpers/test-store.ts); `npm test` runs these few, in one process, so they
 * share one throwaway cluster instead of starting one per file.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';

process.env.SEPP_TEST_STORE = 'postgres';

// In order; imported after the variable is set, so their test servers run on PostgreSQL.
for (const file of [
  '../rpc/unary.test.ts',
  '../rpc/long-poll.test.ts',
  '../rpc/idempotency.test.ts',
  '../rpc/job-control.test.ts',
  '../rpc/results.test.ts',
  '../client/worker.test.ts',
  '../client/worker-prefetch.test.ts',
  '../security/unread-answers.test.ts',
  '../security/unread-work.test.ts',
  '../rpc/give-back.test.ts',
]) {
  await import(file);
}

test('the tests above ran on the PostgreSQL store', async () => {
  const { testStoreKind } = await import('../helpers/test-store.ts');
  assert.equal(testStoreKind, 'postgres');
});
