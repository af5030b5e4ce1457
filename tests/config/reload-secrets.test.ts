/**
 * A reload's answer never carries a secret. Every setting the schema marks
 * secret (schema.ts, `FieldSpec.secret`) is changed between two loads of a
 * file, and the reload's changes — what ReloadConfig answers, what the CLI
 * prints and the log shows — name it with a summary (`changed`), never its
 * value nor its digest. A setting marked secret that this file cannot change
 * fails the test, as does a setting redact.ts hides that the schema does not
 * mark; a URL's credentials are walked the same way.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { test } from 'node:test';
import { isSecretField, redactUrl } from '../../src/config/redact.ts';
import { planReload } from '../../src/config/reload-plan.ts';
import { sections, snakeCase } from '../../src/config/schema.ts';
import { load } from './helpers.ts';

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');
/** A well-formed admin password hash that differs with `secret`. */
const passwordHashOf = (secret: string) =>
  `$scrypt$ln=10,r=8,p=1$c2FsdHNhbHRzYWx0c2FsdA$${createHash('sha512').update(secret).digest('base64').replace(/=+$/, '')}`;

/** A file (and what it reads: variables, secret files) that gives a setting the value `secret`. */
interface Setup {
  readonly toml: string;
  readonly env?: Record<string, string>;
  readonly secretFiles?: Record<string, string>;
}

const postgres = '[store]\nkind = "postgres"\nurl = "postgres://sepp@db.example:5432/sepp"\n';
const apiKey = (line: string) => `[[grpc.api_keys]]\nname = "ci"\nrole = "admin"\n${line}\n`;
const push = '[queues.hooks.push]\nurl = "https://hooks.example/jobs"\n';

/** How to set each secret setting; keyed as configKeys() names them. */
const setters: Record<string, (secret: string) => Setup> = {
  'store.password_file': (s) => ({
    toml: `${postgres}password_file = "/run/secrets/pg"\n`,
    secretFiles: { '/run/secrets/pg': s },
  }),
  'store.password_env': (s) => ({
    toml: `${postgres}password_env = "PGPASSWORD_SEPP"\n`,
    env: { PGPASSWORD_SEPP: s },
  }),
  'grpc.api_keys[].key': (s) => ({ toml: apiKey(`key = "${s}"`) }),
  'grpc.api_keys[].key_sha256': (s) => ({ toml: apiKey(`key_sha256 = "${sha256(s)}"`) }),
  'admin.users[].password_hash': (s) => ({
    toml: `[[admin.users]]\nname = "alice"\nrole = "admin"\npassword_hash = "${passwordHashOf(s)}"\n`,
  }),
  'telemetry.metrics_token': (s) => ({ toml: `[telemetry]\nmetrics_token = "${s}"\n` }),
  'telemetry.metrics_token_sha256': (s) => ({ toml: `[telemetry]\nmetrics_token_sha256 = "${sha256(s)}"\n` }),
  'queues.<name>.push.secret_file': (s) => ({
    toml: `${push}secret_file = "/run/secrets/hook"\n`,
    secretFiles: { '/run/secrets/hook': s },
  }),
  'queues.<name>.push.secret_env': (s) => ({
    toml: `${push}secret_env = "HOOK_SECRET"\n`,
    env: { HOOK_SECRET: s },
  }),
};

const loadSetup = ({ toml, env = {}, secretFiles = {} }: Setup) =>
  load({
    files: { '/srv/sepp/sepp.toml': toml },
    env,
    readSecretFile: (path) => {
      const text = secretFiles[path];
      if (text === undefined) throw Object.assign(new Error(`ENOENT: ${path}`), { code: 'ENOENT' });
      return Buffer.from(text);
    },
  });

/** Every schema setting whose spec satisfies `pick`, by its full TOML key. */
function settingsWhere(pick: (camel: string, spec: (typeof sections)[number]['spec'][string]) => boolean) {
  return sections.flatMap(({ path, spec }) =>
    Object.entries(spec)
      .filter(([camel, fieldSpec]) => pick(camel, fieldSpec))
      .map(([camel]) => `${path}.${snakeCase(camel)}`),
  );
}

/** Everything a reload plan says, as one text: what the RPC answers, the CLI prints and the log shows. */
function planText(plan: ReturnType<typeof planReload>): string {
  return JSON.stringify([plan.changes, plan.changed, plan.restartRequired, plan.shown]);
}

test('every setting redact.ts hides is marked secret in the schema', () => {
  assert.deepEqual(
    settingsWhere((camel, spec) => isSecretField(camel) && spec.secret !== true),
    [],
  );
});

test('a reload that changes a secret names the setting and never shows the secret or its digest', () => {
  const marked = settingsWhere((_, spec) => spec.secret === true);
  assert.ok(marked.length >= 9, `the schema marks ${marked.join(', ')}`);
  const missing = marked.filter((key) => setters[key] === undefined);
  assert.deepEqual(missing, [], 'a secret setting this test cannot change: add it to `setters`');
  for (const key of marked) {
    const set = setters[key];
    assert.ok(set !== undefined);
    const [before, after] = ['old-secret-0123456789abcdef-01', 'new-secret-0123456789abcdef-02'];
    const plan = planReload(loadSetup(set(before)), loadSetup(set(after)));
    assert.ok(plan.changes.length > 0, `${key}: the reload sees the change`);
    for (const change of plan.changes) {
      assert.equal(change.values, undefined, `${key}: ${JSON.stringify(change)} shows values`);
      assert.ok(change.summary !== undefined && change.summary.length > 0, `${key}: says what changed`);
    }
    const text = planText(plan);
    for (const secret of [before, after].flatMap((s) => [s, sha256(s), passwordHashOf(s).split('$').at(-1)!]))
      assert.ok(!text.includes(secret), `${key}: the reload shows ${secret.slice(0, 12)}… in ${text}`);
  }
});

test('a URL setting changed by a reload is shown without its credentials', () => {
  const urls = settingsWhere((_, spec) => spec.field.kind === 'url');
  /** A file setting each URL; store.url takes no credentials at all (store-section.ts refuses them). */
  const setters: Record<string, ((url: string) => string) | null> = {
    'store.url': null,
    'telemetry.otlp_endpoint': (url) => `[telemetry]\notlp_endpoint = "${url}"\n`,
    'queues.<name>.push.url': (url) => `[queues.hooks.push]\nurl = "${url}"\nsecret_env = "HOOK_SECRET"\n`,
  };
  assert.deepEqual(
    urls.filter((key) => !(key in setters)),
    [],
    'a URL setting this test does not know: add it to `setters`',
  );
  const env = { HOOK_SECRET: 'a-push-secret-0123456789abcdef' };
  for (const key of urls) {
    const set = setters[key];
    if (set === null || set === undefined) continue;
    const plan = planReload(
      load({ files: { '/srv/sepp/sepp.toml': set('https://collector.example/v1') }, env }),
      load({
        files: { '/srv/sepp/sepp.toml': set('https://user:pw-9d2f@collector.example/v1?token=tk-7c1e') },
        env,
      }),
    );
    const change = plan.changes.find((c) => c.key.endsWith('url') || c.key.endsWith('endpoint'));
    assert.deepEqual(change?.values, {
      from: 'https://collector.example/v1',
      to: redactUrl('https://user:pw-9d2f@collector.example/v1?token=tk-7c1e'),
    });
    const text = planText(plan);
    assert.ok(!text.includes('pw-9d2f') && !text.includes('tk-7c1e'), `${key}: ${text}`);
  }
});
