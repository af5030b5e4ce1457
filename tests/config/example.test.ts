import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { exampleConfig } from '../../src/config/example.ts';
import { configKeys, environmentVariables } from '../../src/config/schema.ts';
import { load, validText } from './helpers.ts';

/** The example with every `# key = value` and `# [table]` line switched on. */
function uncommented(text: string): string {
  return text
    .split('\n')
    .map((line) => (/^# (\[\[?[a-z0-9_."]+\]\]?$|[a-z0-9_]+ = )/.test(line) ? line.slice(2) : line))
    .join('\n');
}

/**
 * The settings a TOML text mentions, commented or not, as full keys in the
 * form configKeys() uses: `grpc.api_keys[].name`, `queues.<name>.max_attempts`.
 */
function mentionedKeys(text: string): Set<string> {
  const keys = new Set<string>();
  let table = '';
  for (const line of text.split('\n')) {
    const header = /^#? ?\[(\[?)([a-z0-9_.]+)\]?\]$/.exec(line.trim());
    if (header !== null) {
      const [, array, name = ''] = header;
      table = /^queues\.[^.]+\.push$/.test(name)
        ? 'queues.<name>.push'
        : name.startsWith('queues.')
          ? 'queues.<name>'
          : `${name}${array === '[' ? '[]' : ''}`;
      continue;
    }
    const setting = /^#?\s*([a-z0-9_]+) = /.exec(line);
    if (setting !== null) keys.add(`${table}.${setting[1]}`);
  }
  return keys;
}

/** `queues.<name>` takes the same keys as `[queue_defaults]`, which the example and the docs list once. */
const queueKeysListedOnce = (key: string) => key.replace(/^queues\.<name>\.(?!push\.)/, 'queue_defaults.');

test('the example is valid as printed, and as printed it is exactly the defaults', () => {
  const config = validText(exampleConfig);
  const defaults = load();
  assert.deepEqual({ ...config, configFile: null }, defaults);
});

test('the example is valid with every commented-out setting switched on, and shows the true defaults', () => {
  const config = validText(uncommented(exampleConfig));
  const defaults = load();
  // The HTTP API is off by default; the example shows an address to turn it on with.
  assert.deepEqual({ ...config.server, httpListen: null }, defaults.server);
  assert.deepEqual({ ...config.grpc, tls: null, apiKeys: [] }, defaults.grpc);
  assert.deepEqual({ ...config.admin, tls: null, users: [] }, defaults.admin);
  assert.deepEqual({ ...config.http, tls: null }, defaults.http);
  assert.notEqual(config.http.tls, null);
  assert.deepEqual(Object.keys(config.push), ['emails']);
  assert.deepEqual({ ...config.telemetry, otlpEndpoint: null, metricsTokenSha256: null }, defaults.telemetry);
  assert.deepEqual(config.engine.limits, defaults.engine.limits);
  assert.deepEqual(config.engine.queueDefaults, defaults.engine.queueDefaults);
  assert.equal(config.engine.strictQueues, defaults.engine.strictQueues);
  // The samples really are switched on, so they were validated too.
  assert.equal(config.grpc.apiKeys.length, 1);
  assert.equal(config.admin.users.length, 1);
  assert.notEqual(config.grpc.tls, null);
  assert.notEqual(config.admin.tls, null);
  assert.notEqual(config.telemetry.metricsTokenSha256, null);
  assert.deepEqual(Object.keys(config.engine.queues), ['emails']);
});

test('every setting the loader knows is in the example, and the example has no others', () => {
  const known = new Set(configKeys().map(queueKeysListedOnce));
  const mentioned = new Set([...mentionedKeys(exampleConfig)].map(queueKeysListedOnce));
  assert.deepEqual(
    [...known].filter((k) => !mentioned.has(k)),
    [],
    'settings missing from the example',
  );
  assert.deepEqual(
    [...mentioned].filter((k) => !known.has(k)),
    [],
    'settings in the example the loader does not know',
  );
});

test('docs/configuration.md documents every setting and every environment variable', () => {
  const docs = readFileSync(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
  const missing = [...new Set(configKeys().map(queueKeysListedOnce))].filter(
    (key) => !docs.includes(`\`${key}\``),
  );
  assert.deepEqual(missing, [], 'settings missing from docs/configuration.md');
  const missingEnv = environmentVariables().filter((v) => !docs.includes(`\`${v.name}\``));
  assert.deepEqual(missingEnv, [], 'variables missing from docs/configuration.md');
  for (const v of environmentVariables()) {
    assert.ok(exampleConfig.includes(v.name), `${v.name} is mentioned in the example`);
  }
});
