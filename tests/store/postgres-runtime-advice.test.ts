/**
 * The words of a PostgreSQL failure while the server runs, as a caller and `sepp` see them:
 * a refused login (a wrong or expired password) says what to do and is not told to repeat
 * the call; an outage still is. No cluster: the driver's error is built as it arrives.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { SeppError } from '../../clients/typescript/src/index.ts';
import { storeUnavailableMessage } from '../../src/cli/commands/connection.ts';
import { storageFailure } from '../../src/store/postgres/connect.ts';

/** An error as the driver hands it over: PostgreSQL's message and its SQLSTATE in `code`. */
function driverError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

/** What the CLI prints for a failure the engine reports as it does for every storage failure. */
function cliMessage(cause: Error): string {
  const failure = storageFailure(cause);
  const error = new SeppError(
    status.UNAVAILABLE,
    `storage unavailable, nothing was written: ${failure.message}`,
  );
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
  assert.equal(storageFailure(refused).message, 'PostgreSQL: connect ECONNREFUSED 127.0.0.1:5432');
  assert.match(cliMessage(refused), /; repeat the call once the database answers again/);
  const shutdown = driverError('terminating connection due to administrator command', '57P01');
  assert.doesNotMatch(storageFailure(shutdown).message, /no repeat helps/);
});
