/**
 * The words of a PostgreSQL failure while the server runs, as a caller and `sepp` see them:
 * a refused login (a wrong or expired password) says what to do and is not told to repeat
 * the call; an outage still is. No cluster: the driver's error is built as it arrives.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Metadata, status } from '@grpc/grpc-js';
import { toSeppError } from '../../clients/typescript/src/errors.ts';
import { storeUnavailableMessage } from '../../src/cli/commands/connection.ts';
import { SeppError as EngineError } from '../../src/engine/errors.ts';
import { errorAnswer } from '../../src/http/errors.ts';
import { toServiceError } from '../../src/rpc/status.ts';
import { connectPostgres, storageFailure } from '../../src/store/postgres/connect.ts';

/** An error as the driver hands it over: PostgreSQL's message and its SQLSTATE in `code`. */
function driverError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

/**
 * What the CLI prints for a failure the engine reports as it does for every storage failure,
 * carried as gRPC carries it: the server's status and trailers, read back by the SDK.
 */
function cliMessage(cause: Error): string {
  const failure = storageFailure(cause);
  const answer = toServiceError(
    new EngineError('unavailable', `storage unavailable, nothing was written: ${failure.message}`, {
      lasting: failure.lasting,
    }),
  );
  const error = toSeppError(Object.assign(new Error(answer.details), answer));
  return storeUnavailableMessage('localhost:7400', error);
}

test('a refused login while the server runs says what to do, and not to repeat the call', () => {
  const expired = driverError('password authentication failed for user "sepp"', '28P01');
  const failure = storageFailure(expired);
  assert.match(
    failure.message,
    /^PostgreSQL: password authentication failed for user "sepp" — no repeat helps/,
  );
  assert.match(failure.message, /VALID UNTIL/);
  assert.match(failure.message, /store\.password_file or store\.password_env/);
  assert.equal(failure.lasting, true);
  const printed = cliMessage(expired);
  assert.doesNotMatch(printed, /repeat the call/);
  assert.match(printed, /ALTER ROLE/);
  // Several hosts: the reason of each is in the words, without a SQLSTATE of the whole.
  const hosts = new Error(
    'no PostgreSQL host answers (db1:5432: password authentication failed for user "sepp")',
  );
  assert.match(storageFailure(hosts).message, /no repeat helps/);
});

test('an outage while the server runs is still told to repeat the call', () => {
  const refused = driverError('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED');
  assert.equal(storageFailure(refused).message, 'PostgreSQL: connect ECONNREFUSED <store address>');
  assert.equal(storageFailure(refused).logMessage, 'PostgreSQL: connect ECONNREFUSED 127.0.0.1:5432');
  assert.equal(storageFailure(refused).lasting, false);
  assert.match(cliMessage(refused), /; repeat the call once the database answers again/);
  const shutdown = driverError('terminating connection due to administrator command', '57P01');
  assert.doesNotMatch(storageFailure(shutdown).message, /no repeat helps/);
});

test('the CLI takes its advice from the sepp-retry trailer, not from the words', () => {
  const words = 'storage unavailable, nothing was written: PostgreSQL: something new went wrong';
  const marked = (retry: 'never' | 'operator' | 'later' | undefined) => {
    const metadata = new Metadata();
    metadata.set('sepp-error-code', 'unavailable');
    if (retry !== undefined) metadata.set('sepp-retry', retry);
    const error = toSeppError(
      Object.assign(new Error(words), { code: status.UNAVAILABLE, details: words, metadata }),
    );
    assert.equal(error.retry, retry);
    return storeUnavailableMessage('localhost:7400', error);
  };
  // `operator`: someone must fix the server first; `never`: no repeat can pass. A one-shot
  // command advises repeating neither.
  assert.doesNotMatch(marked('operator'), /repeat the call/);
  assert.doesNotMatch(marked('never'), /repeat the call/);
  assert.match(marked('later'), /; repeat the call once the database answers again/);
  assert.match(marked(undefined), /; repeat the call once the database answers again/);
});

test('gRPC and HTTP say the same: a refused login waits for an operator, an outage is later', () => {
  const answers = (cause: Error) => {
    const failure = storageFailure(cause);
    const error = new EngineError('unavailable', `storage unavailable: ${failure.message}`, {
      lasting: failure.lasting,
    });
    return { grpc: toServiceError(error).metadata?.get('sepp-retry'), http: errorAnswer(error).headers };
  };
  const refused = answers(driverError('password authentication failed for user "sepp"', '28P01'));
  // Long-running clients keep backing off until someone fixes the login; HTTP: 503, no Retry-After.
  assert.deepEqual(refused.grpc, ['operator']);
  assert.equal(refused.http['Retry-After'], undefined);
  const outage = answers(driverError('connect ECONNREFUSED 127.0.0.1:5432', 'ECONNREFUSED'));
  assert.deepEqual(outage.grpc, ['later']);
  assert.equal(outage.http['Retry-After'], '1');
});

test("a failure's answer never says where the store is; its log message does", async () => {
  // GetServerInfo tells where the store is to an admin key for every queue only (SECURITY.md).
  const cases: [Error, string][] = [
    [
      Object.assign(new Error('getaddrinfo ENOTFOUND db.internal'), {
        code: 'ENOTFOUND',
        hostname: 'db.internal',
      }),
      'PostgreSQL: getaddrinfo ENOTFOUND <store address>',
    ],
    [
      Object.assign(new Error('connect ECONNREFUSED ::1:5432'), {
        code: 'ECONNREFUSED',
        address: '::1',
        port: 5432,
      }),
      'PostgreSQL: connect ECONNREFUSED <store address>',
    ],
    [
      new AggregateError(
        [Object.assign(new Error('connect ECONNREFUSED 10.1.2.3:6432'), { address: '10.1.2.3', port: 6432 })],
        'connect ECONNREFUSED 10.1.2.3:6432',
      ),
      'PostgreSQL: connect ECONNREFUSED <store address>',
    ],
    [
      driverError('terminating connection due to administrator command', '57P01'),
      'PostgreSQL: terminating connection due to administrator command',
    ],
  ];
  // Several hosts, none answering (nothing listens on ports 1 and 2): each host's reason, hidden.
  const noHost = await connectPostgres(
    {
      url: 'postgres://sepp@127.0.0.1:1,localhost:2/db',
      password: null,
      schema: 's',
      statementTimeoutMs: 1000,
    },
    () => {},
  ).then(
    () => assert.fail('connected to nothing'),
    (error: Error) => error,
  );
  assert.match(noHost.message, /^no PostgreSQL host answers \(127\.0\.0\.1:1: .*; localhost:2: .*\)$/);
  assert.match(
    storageFailure(noHost).message,
    /^PostgreSQL: no PostgreSQL host answers \(<store address>: .*; <store address>: .*\)$/,
  );
  assert.doesNotMatch(storageFailure(noHost).message, /127\.0\.0\.1|localhost|:1\b|:2\b/);
  for (const [cause, answer] of cases) {
    const failure = storageFailure(cause);
    assert.equal(failure.message, answer);
    assert.equal(failure.logMessage, `PostgreSQL: ${cause.message}`);
  }
});
