/**
 * The reload safety rules cover the HTTP API (issue 34 on top of issue 29,
 * item 1): it takes gRPC's keys, so a file without keys is refused while the
 * API listens on a network address, and dropping [http.tls] is a downgrade.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { boundAddress } from '../../src/config/listen-address.ts';
import { checkReloadSafety } from '../../src/config/reload-safety.ts';
import type { SeppConfig } from '../../src/config/types.ts';
import { loadToml } from './helpers.ts';

const key = '[[grpc.api_keys]]\nname = "ops"\nrole = "admin"\nkey = "0123456789abcdef0123"\n';
const httpTls = '[http.tls]\ncert_file = "/etc/sepp/c.pem"\nkey_file = "/etc/sepp/k.pem"\n';

function listening(config: SeppConfig, http: string | null) {
  return {
    grpc: boundAddress(config.server.grpcListen, 50051),
    admin: boundAddress(config.server.adminListen, 9465),
    http: http === null ? null : loadToml(`[server]\nhttp_listen = "${http}"\n${key}`).server.httpListen,
  };
}

test('a keyless file is refused while the HTTP API listens on a network address, even when allowed', () => {
  const running = loadToml(`[server]\nhttp_listen = "0.0.0.0:8080"\n${key}`);
  const next = loadToml('[server]\nhttp_listen = "127.0.0.1:8080"\n[queues.q]\nmax_attempts = 3\n');
  const safety = checkReloadSafety({
    running,
    next,
    listening: listening(running, '0.0.0.0:8080'),
    allowSecurityDowngrade: true,
  });
  const http = safety.problems.find((p) => /server\.http_listen/.test(p.message));
  assert.ok(http, JSON.stringify(safety.problems));
  assert.equal(http.key, 'grpc.api_keys');
  assert.match(http.message, /listens on 0\.0\.0\.0:8080/);
  assert.match(http.message, /http\.insecure_allow_unauthenticated/);
});

test('the same file is fine for a server whose HTTP API is off or on loopback (with the flag)', () => {
  const running = loadToml(key);
  const next = loadToml('[queues.q]\nmax_attempts = 3\n');
  for (const http of [null, '127.0.0.1:8080']) {
    const safety = checkReloadSafety({
      running,
      next,
      listening: listening(running, http),
      allowSecurityDowngrade: true,
    });
    assert.deepEqual(safety.problems, [], `http ${http}`);
    assert.deepEqual(safety.downgrades, ['grpc.api_keys']);
  }
});

test('removing [http.tls] is a downgrade: refused without the flag, reported with it', () => {
  const running = loadToml(`[server]\nhttp_listen = "127.0.0.1:8080"\n${key}${httpTls}`);
  const next = loadToml(`[server]\nhttp_listen = "127.0.0.1:8080"\n${key}`);
  const refused = checkReloadSafety({
    running,
    next,
    listening: listening(running, '127.0.0.1:8080'),
    allowSecurityDowngrade: false,
  });
  assert.deepEqual(
    refused.problems.map((p) => p.key),
    ['http.tls'],
  );
  assert.match(refused.problems[0]?.message ?? '', /no \[http\.tls\].*--allow-security-downgrade/);
  const allowed = checkReloadSafety({
    running,
    next,
    listening: listening(running, '127.0.0.1:8080'),
    allowSecurityDowngrade: true,
  });
  assert.deepEqual(allowed.problems, []);
  assert.deepEqual(allowed.downgrades, ['http.tls']);
});
