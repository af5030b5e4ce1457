import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertProblem, loadToml, problemsOf } from './helpers.ts';

const apiKey = `[[grpc.api_keys]]\nname = "p"\nrole = "producer"\nkey_sha256 = "${'ab'.repeat(32)}"\n`;
const adminUser =
  '[[admin.users]]\nname = "alice"\nrole = "admin"\npassword_hash = "' +
  '$scrypt$ln=15,r=8,p=1$P3NVlUQOFwHxCn7kOj/oKg$gJV+Dq+u5sCSPd1UIn5tW+xqeN7CTeMVMu+bsCpy60yAnP1x+qIyU7URf4PIcYgT2f+PhwQx7aw2uYiDaKwgPA"\n';

test('loopback addresses need no credentials', () => {
  for (const host of ['127.0.0.1', '127.8.9.10', 'localhost', '[::1]']) {
    const config = loadToml(`[server]\ngrpc_listen = "${host}:1"\nadmin_listen = "${host}:2"\n`);
    assert.equal(config.server.grpcListen.loopback, true, host);
    assert.equal(config.server.adminListen.loopback, true, host);
  }
});

test('gRPC on a network address without API keys refuses, naming grpc.api_keys and the insecure flag', () => {
  for (const address of ['0.0.0.0:50051', '[::]:50051', '10.0.0.5:50051', 'sepp.internal:50051']) {
    const problems = problemsOf(`[server]\ngrpc_listen = "${address}"\n`);
    assertProblem(
      problems,
      'grpc.api_keys',
      /none configured/,
      new RegExp(`server\\.grpc_listen \\(${address.replace(/[[\].]/g, '\\$&')}\\)`),
      /\[\[grpc\.api_keys\]\]/,
      // The command that makes a key, as `sepp admin new-api-key` is what a user needs next.
      /`sepp admin new-api-key --name NAME --role ROLE` prints one/,
      /grpc\.insecure_allow_unauthenticated = true/,
    );
    assert.equal(problems.length, 1);
  }
});

test('the same rule applies when the address comes from a flag or a variable', () => {
  assertProblem(
    problemsOf('', { flags: { grpcListen: '0.0.0.0:50051' } }),
    'grpc.api_keys',
    /none configured/,
  );
  assertProblem(
    problemsOf('', { env: { SEPP_ADMIN_LISTEN: '0.0.0.0:9465' } }),
    'admin.users',
    /none configured/,
  );
});

test('the admin UI on a network address without users refuses, naming admin.users and the insecure flag', () => {
  const problems = problemsOf('[server]\nadmin_listen = "0.0.0.0:9465"\n');
  assertProblem(
    problems,
    'admin.users',
    /server\.admin_listen \(0\.0\.0\.0:9465\)/,
    /\[\[admin\.users\]\]/,
    /admin\.insecure_allow_unauthenticated = true/,
  );
  assert.equal(problems.length, 1);
});

test('credentials or the explicit insecure flag allow a network address', () => {
  const withCredentials = loadToml(
    `[server]\ngrpc_listen = "0.0.0.0:50051"\nadmin_listen = "0.0.0.0:9465"\n${apiKey}${adminUser}`,
  );
  assert.equal(withCredentials.grpc.apiKeys.length, 1);
  assert.equal(withCredentials.admin.users.length, 1);
  const insecure = loadToml(
    '[server]\ngrpc_listen = "0.0.0.0:50051"\nadmin_listen = "0.0.0.0:9465"\n' +
      '[grpc]\ninsecure_allow_unauthenticated = true\n[admin]\ninsecure_allow_unauthenticated = true\n',
  );
  assert.equal(insecure.grpc.insecureAllowUnauthenticated, true);
  assert.equal(insecure.admin.insecureAllowUnauthenticated, true);
});

test('the insecure flag together with credentials is contradictory and refused', () => {
  const problems = problemsOf(
    `[grpc]\ninsecure_allow_unauthenticated = true\n${apiKey}[admin]\ninsecure_allow_unauthenticated = true\n${adminUser}`,
  );
  assertProblem(
    problems,
    'grpc.insecure_allow_unauthenticated',
    /grpc\.api_keys is set.*every request must authenticate/,
  );
  assertProblem(problems, 'admin.insecure_allow_unauthenticated', /admin\.users is set/);
  assert.equal(problems.length, 2);
});

test('invalid keys on a network address report the keys, not a missing-keys error', () => {
  const problems = problemsOf(
    '[server]\ngrpc_listen = "0.0.0.0:1"\n[[grpc.api_keys]]\nname = "p"\nrole = "producer"\n',
  );
  assertProblem(problems, 'grpc.api_keys[0].key', /neither key nor key_sha256/);
  assert.equal(problems.length, 1);
});
