/**
 * /metrics with telemetry.metrics_token: Prometheus sends the token as a
 * bearer token; anything else is 401 with WWW-Authenticate. Without the
 * setting /metrics stays open, as before.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { registerSecret } from '../helpers/secret-log.ts';
import { startTestServer } from '../helpers/server.ts';

const token = 'prometheus-scrape-token-6f1c2a';
registerSecret('metrics token', token);

test('with metrics_token_sha256 set, /metrics answers only the right bearer token', async () => {
  // As docs/observability.md shows it: printf %s "$TOKEN" | sha256sum
  const sha = execFileSync('sh', ['-c', 'printf %s "$TOKEN" | sha256sum'], {
    env: { TOKEN: token },
    encoding: 'utf8',
  })
    .split(' ')[0]
    ?.trim();
  assert.equal(sha, createHash('sha256').update(token).digest('hex'));
  const t = await startTestServer({ toml: `[telemetry]\nmetrics_token_sha256 = "${sha}"\n` });
  try {
    const ok = await fetch(t.metricsUrl, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(ok.status, 200);
    assert.match(await ok.text(), /^# HELP /m);
    for (const authorization of [
      undefined,
      'Bearer wrong-token-wrong-token',
      `Basic ${token}`,
      `Bearer ${token}x`,
      'Bearer',
    ]) {
      const refused = await fetch(
        t.metricsUrl,
        authorization === undefined ? {} : { headers: { authorization } },
      );
      assert.equal(refused.status, 401, String(authorization));
      assert.equal(refused.headers.get('www-authenticate'), 'Bearer realm="sepp metrics"');
      const body = (await refused.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'unauthenticated');
      assert.match(body.error.message, /telemetry\.metrics_token/);
    }
  } finally {
    await t.dispose();
  }
});

test('metrics_token in plain text works the same; without a token /metrics is open as before', async () => {
  const t = await startTestServer({ toml: `[telemetry]\nmetrics_token = "${token}"\n` });
  try {
    assert.equal((await fetch(t.metricsUrl, { headers: { authorization: `bearer ${token}` } })).status, 200);
    assert.equal((await fetch(t.metricsUrl)).status, 401);
  } finally {
    await t.dispose();
  }
  const open = await startTestServer();
  try {
    assert.equal((await fetch(open.metricsUrl)).status, 200);
  } finally {
    await open.dispose();
  }
});
