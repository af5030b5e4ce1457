/**
 * A reload never lowers security silently (issue 29, item 1). A truncated,
 * empty or key-less file, one without admin users or without TLS, is refused
 * whole, with an ERROR line and an audit entry, and the running configuration
 * stays; an explicit `allow_security_downgrade` lets one through only where
 * the start-up rule would allow it for the address the server listens on —
 * which is the running one, not the one the new file names. Each case runs
 * against a server on loopback and one on a network address: `0.0.0.0`, which
 * the start-up rule treats as reachable from other machines (any address but
 * 127.0.0.0/8, ::1 and `localhost` is), named in the file, not by a flag.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Metadata, type ServiceError, status } from '@grpc/grpc-js';
import type { ReloadConfigResponse } from '../../clients/typescript/src/gen/sepp/v1/admin.js';
import { createLogger } from '../../src/telemetry/logger.ts';
import { call, startTestServer, type TestServer } from '../helpers/server.ts';
import { selfSignedCertificate, type TestCertificate } from '../helpers/tls.ts';

const opsKey = 'sepp-secret-reload-security-ops-0123456789';
const passwordHash =
  '$scrypt$ln=15,r=8,p=1$P3NVlUQOFwHxCn7kOj/oKg$gJV+Dq+u5sCSPd1UIn5tW+xqeN7CTeMVMu+bsCpy60yAnP1x+qIyU7URf4PIcYgT2f+PhwQx7aw2uYiDaKwgPA';
const withKey = () => {
  const metadata = new Metadata();
  metadata.set('authorization', `Bearer ${opsKey}`);
  return metadata;
};
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => status.OK,
    (e: ServiceError) => e.code,
  );

interface LogLine {
  level: string;
  event: string;
  [field: string]: unknown;
}

for (const place of ['loopback', 'network'] as const) {
  describe(`a reload of a server on ${place === 'loopback' ? '127.0.0.1' : '0.0.0.0'} never lowers security silently`, () => {
    let t: TestServer;
    let dir: string;
    let cert: TestCertificate;
    const lines: LogLine[] = [];
    // The file, section by section, in the order a truncation removes them.
    const parts = {
      queues: '[queues.r]\nmax_attempts = 4\n',
      server: place === 'network' ? '[server]\ngrpc_listen = "0.0.0.0:0"\nadmin_listen = "0.0.0.0:0"\n' : '',
      // The file moved to loopback: that takes a restart, so the server still listens on 0.0.0.0.
      serverMoved:
        place === 'network' ? '[server]\ngrpc_listen = "127.0.0.1:0"\nadmin_listen = "127.0.0.1:0"\n' : '',
      users: `[[admin.users]]\nname = "alice"\nrole = "admin"\npassword_hash = "${passwordHash}"\n`,
      tls: () => cert.toml('grpc') + cert.toml('admin'),
      keys: `[[grpc.api_keys]]\nname = "ops"\nrole = "admin"\nkey = "${opsKey}"\n`,
    };
    const full = () => parts.queues + parts.server + parts.users + parts.tls() + parts.keys;

    const reloadOverGrpc = (
      request: { dryRun: boolean; allowSecurityDowngrade: boolean },
      metadata = withKey(),
    ) => call(t.client, t.client.reloadConfig, request, metadata) as Promise<ReloadConfigResponse>;
    const unauthenticatedCall = () =>
      codeOf(call(t.client, t.client.listQueues, { pageSize: 0, pageToken: '' }, new Metadata()));
    const lastAudit = async () => (await t.server.engine.listAudit({ action: 'config.reload' })).items[0];
    const linesFrom = (from: number) => lines.slice(from);

    /**
     * Asserts that a reload of `text` was refused naming `keys`, and that authentication still holds.
     * `exactly`: the file holds `text` alone, without the test store's [store] table (an empty file).
     */
    const assertRefused = async (text: string, keys: readonly string[], why: string, exactly = false) => {
      if (exactly) writeFileSync(t.configFile, text);
      else t.writeConfig(text);
      const from = lines.length;
      const report = await t.server.reload({ actor: 'signal:SIGHUP' });
      assert.equal(report.applied, false, `${why}: the reload must be refused`);
      for (const key of keys) {
        assert.ok(
          report.problems.some((p) => p.key === key),
          `${why}: a problem names ${key}: ${JSON.stringify(report.problems)}`,
        );
      }
      assert.equal(
        await unauthenticatedCall(),
        status.UNAUTHENTICATED,
        `${why}: a call without a key is refused`,
      );
      assert.equal(t.server.config().grpc.apiKeys.length, 1);
      assert.equal(t.server.config().admin.users.length, 1);
      assert.notEqual(t.server.config().grpc.tls, null);
      const refused = linesFrom(from).find((l) => l.event === 'config.reload_refused');
      assert.ok(refused, `${why}: a config.reload_refused line`);
      assert.equal(refused.level, 'error');
      assert.ok(
        !linesFrom(from).some((l) => l.level === 'info' && l.event.startsWith('config.')),
        'no INFO line says it was fine',
      );
      const entry = await lastAudit();
      assert.equal(entry?.actor, 'signal:SIGHUP');
      assert.equal(entry?.details.result, 'refused');
      const audited = (entry?.details.problems ?? []) as string[];
      for (const key of keys) assert.ok(audited.includes(key), JSON.stringify(entry));
      return report;
    };

    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'sepp-reload-security-'));
      cert = selfSignedCertificate(dir);
      t = await startTestServer({
        toml: full(),
        listenFromFile: place === 'network',
        tls: { certPem: cert.certPem, caPem: cert.certPem },
        logger: createLogger({
          level: 'debug',
          format: 'json',
          write: (line) => lines.push(JSON.parse(line) as LogLine),
        }),
      });
      assert.equal(t.server.config().server.grpcListen.loopback, place === 'loopback');
    });
    after(async () => {
      await t.dispose();
      rmSync(dir, { recursive: true, force: true });
    });

    test('a file cut short is refused: one cut at a line boundary parses but has no keys, users or TLS', async () => {
      const text = full();
      const cut = text.slice(0, text.indexOf(parts.server === '' ? '[[admin.users]]' : '[server]'));
      assert.equal(cut, parts.queues);
      await assertRefused(
        cut,
        ['grpc.api_keys', 'admin.users', 'grpc.tls', 'admin.tls'],
        'cut after [queues.r]',
      );
      // Cut before the closing quote: the TOML error quotes the line, and the log must not hold the key.
      const midLine = text.slice(0, text.indexOf(opsKey) + opsKey.length);
      const from = lines.length;
      await assertRefused(midLine, [], 'cut inside the key');
      const logged = JSON.stringify(linesFrom(from));
      assert.match(logged, /invalid TOML/);
      assert.ok(!logged.includes(opsKey.slice(0, 16)), `no part of the key is logged: ${logged}`);
    });

    test('an empty file is refused: a reload never falls back to the defaults', async () => {
      const report = await assertRefused('', [t.configFile], 'empty', true);
      assert.match(report.problems.find((p) => p.key === t.configFile)?.message ?? '', /no settings/);
      await assertRefused('# only a comment\n\n', [t.configFile], 'comments only', true);
    });

    test('a file without API keys is refused', async () => {
      await assertRefused(
        parts.queues + parts.serverMoved + parts.users + parts.tls(),
        ['grpc.api_keys'],
        'key-less',
      );
    });

    test('a file without admin users is refused', async () => {
      await assertRefused(
        parts.queues + parts.serverMoved + parts.tls() + parts.keys,
        ['admin.users'],
        'user-less',
      );
    });

    test('a file without TLS is refused', async () => {
      await assertRefused(
        parts.queues + parts.server + parts.users + parts.keys,
        ['grpc.tls', 'admin.tls'],
        'TLS-less',
      );
    });

    test('a dry run reports the refusal, changes nothing and is audited as one', async () => {
      t.writeConfig(parts.queues + parts.serverMoved + parts.users + parts.tls());
      const report = await reloadOverGrpc({ dryRun: true, allowSecurityDowngrade: false });
      assert.equal(report.applied, false);
      assert.ok(report.problems.some((p) => p.key === 'grpc.api_keys'));
      assert.ok(report.securityDowngrades.includes('grpc.api_keys'), 'a refusal for it names it too');
      assert.equal(await unauthenticatedCall(), status.UNAUTHENTICATED);
      assert.equal((await lastAudit())?.details.result, 'dry_run');
      assert.equal((await lastAudit())?.actor, 'key:ops');
    });

    if (place === 'loopback') {
      test('on loopback, allow_security_downgrade lets the keys go: a WARN line and an audit entry say so', async () => {
        t.writeConfig(parts.queues + parts.users + parts.tls());
        const from = lines.length;
        const report = await reloadOverGrpc({ dryRun: false, allowSecurityDowngrade: true });
        assert.deepEqual(report.problems, []);
        assert.equal(report.applied, true);
        assert.ok(report.changed.includes('grpc.api_keys (removed ops)'), report.changed.join());
        assert.deepEqual(report.securityDowngrades, ['grpc.api_keys'], 'the answer says what it lowered');
        assert.equal(await unauthenticatedCall(), status.OK, 'gRPC now serves without keys, as asked');
        const warned = linesFrom(from).find((l) => l.event === 'config.security_downgraded');
        assert.equal(warned?.level, 'warn');
        assert.match(String(warned?.settings), /grpc\.api_keys/);
        const entry = await lastAudit();
        assert.equal(entry?.details.result, 'applied');
        assert.deepEqual(entry?.details.securityDowngrades, ['grpc.api_keys']);
        assert.ok(!JSON.stringify(entry).includes(opsKey), 'never the key itself');
        // Adding keys back needs no flag.
        t.writeConfig(full());
        assert.equal((await t.server.reload({ actor: 'test' })).applied, true);
        assert.equal(await unauthenticatedCall(), status.UNAUTHENTICATED);
      });

      test('on loopback, allow_security_downgrade lets users and TLS go (at the next restart)', async () => {
        t.writeConfig(parts.queues + parts.keys);
        const report = await t.server.reload({ actor: 'test', allowSecurityDowngrade: true });
        assert.deepEqual(report.problems, []);
        for (const setting of ['admin.users (removed alice)', 'grpc.tls', 'admin.tls'])
          assert.ok(report.restartRequired.includes(setting), report.restartRequired.join());
        assert.deepEqual((await lastAudit())?.details.securityDowngrades, [
          'admin.users',
          'grpc.tls',
          'admin.tls',
        ]);
        t.writeConfig(full());
        assert.equal((await t.server.reload({ actor: 'test' })).applied, true);
      });
    } else {
      test('on 0.0.0.0, allow_security_downgrade does not let the keys go: the start-up rule refuses it there', async () => {
        t.writeConfig(parts.queues + parts.serverMoved + parts.users + parts.tls());
        const report = await reloadOverGrpc({ dryRun: false, allowSecurityDowngrade: true });
        assert.equal(report.applied, false);
        const problem = report.problems.find((p) => p.key === 'grpc.api_keys');
        assert.match(problem?.message ?? '', /listens on 0\.0\.0\.0:\d+/);
        assert.match(problem?.message ?? '', /grpc\.insecure_allow_unauthenticated = true/);
        assert.equal(await unauthenticatedCall(), status.UNAUTHENTICATED);
        t.writeConfig(parts.queues + parts.serverMoved + parts.tls() + parts.keys);
        const users = await reloadOverGrpc({ dryRun: false, allowSecurityDowngrade: true });
        assert.equal(users.applied, false);
        assert.match(
          users.problems.find((p) => p.key === 'admin.users')?.message ?? '',
          /listens on 0\.0\.0\.0/,
        );
      });

      test('on 0.0.0.0, the flag and insecure_allow_unauthenticated together let the keys go', async () => {
        t.writeConfig(
          `${parts.queues + parts.serverMoved + parts.users + parts.tls()}[grpc]\ninsecure_allow_unauthenticated = true\n`,
        );
        const refused = await reloadOverGrpc({ dryRun: false, allowSecurityDowngrade: false });
        assert.equal(refused.applied, false, 'not without the flag');
        const report = await reloadOverGrpc({ dryRun: false, allowSecurityDowngrade: true });
        assert.deepEqual(report.problems, []);
        assert.equal(report.applied, true);
        assert.equal(await unauthenticatedCall(), status.OK);
        t.writeConfig(full());
        assert.equal((await t.server.reload({ actor: 'test' })).applied, true);
        assert.equal(await unauthenticatedCall(), status.UNAUTHENTICATED);
      });

      test('on 0.0.0.0, the flag lets TLS go: no start-up rule refuses a port without TLS', async () => {
        t.writeConfig(parts.queues + parts.server + parts.users + parts.keys);
        const report = await t.server.reload({ actor: 'test', allowSecurityDowngrade: true });
        assert.deepEqual(report.problems, []);
        for (const setting of ['grpc.tls', 'admin.tls'])
          assert.ok(report.restartRequired.includes(setting), report.restartRequired.join());
        t.writeConfig(full());
        assert.equal((await t.server.reload({ actor: 'test' })).applied, true);
      });
    }
  });
}
