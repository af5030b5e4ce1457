/**
 * The reload sessions of docs/configuration.md and docs/cli.md, run as a
 * reader would: a server runs on a file, the file is edited as their examples
 * say (the log level, a queue's setting, a /metrics token added, the
 * durability), and every `sepp` command of their console blocks succeeds and
 * prints what the docs show, each setting with its old and new value and the
 * token as `changed` (the file's path stands for /etc/sepp/sepp.toml). Other
 * commands (`systemctl`, `journalctl`) are not run. Their downgrade examples too:
 * a reload refused, then let through by `--allow-security-downgrade`, saying what
 * it lowered.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { sepp } from '../helpers/cli.ts';
import { registerSecret } from '../helpers/secret-log.ts';
import { apiKeysToml, startTestServer, type TestServer } from '../helpers/server.ts';

const adminKey = 'reload-docs-admin-key-0123456789';
registerSecret('reload docs admin key', adminKey);
const metricsToken = 'reload-docs-metrics-token-0123456789';
registerSecret('reload docs /metrics token', metricsToken);
const deployKey = 'reload-docs-deploy-key-0123456789';
registerSecret('reload docs deploy key', deployKey);
const keys = apiKeysToml([{ name: 'ops', role: 'admin', key: adminKey }]);
/** The key deploy, with `role`. */
const deploy = (role: 'producer' | 'admin') => apiKeysToml([{ name: 'deploy', role, key: deployKey }]);

/** The console blocks of `doc` with a line `$ ${command}`, as steps. */
function sessions(
  doc: string,
  command = 'sepp config check --against-running',
): { command: string; shown: string }[][] {
  const text = readFileSync(join(import.meta.dirname, '..', '..', 'docs', doc), 'utf8');
  const blocks = [...text.matchAll(/```console\n([\s\S]*?)```/g)]
    .map((m) => m[1] ?? '')
    .filter((block) => block.includes(`$ ${command}\n`));
  assert.ok(blocks.length > 0, `${doc} shows a reload`);
  return blocks.map((block) => {
    const steps: { command: string; shown: string }[] = [];
    for (const line of block.trimEnd().split('\n')) {
      if (line.startsWith('$ ')) steps.push({ command: line.slice(2), shown: '' });
      else {
        const last = steps.at(-1);
        assert.ok(last !== undefined, `${doc}: output before any command: ${line}`);
        last.shown += `${line}\n`;
      }
    }
    return steps;
  });
}

let t: TestServer;
before(async () => {
  t = await startTestServer({ toml: `${keys}[queues.emails]\nmax_attempts = 5\n` });
});
after(() => t?.dispose());

test('the reload examples of docs/configuration.md and docs/cli.md print what the docs show', async () => {
  t.writeConfig(
    `${keys}[server]\nlog_level = "debug"\ndurability = "relaxed"\n` +
      `[telemetry]\nmetrics_token = "${metricsToken}"\n[queues.emails]\nmax_attempts = 8\n`,
  );
  // configuration.md's block only checks; cli.md's checks, then reloads.
  let ran = 0;
  for (const doc of ['configuration.md', 'cli.md']) {
    for (const steps of sessions(doc)) {
      for (const { command, shown } of steps) {
        if (!command.startsWith('sepp ')) continue;
        const run = await sepp([...command.slice('sepp '.length).split(' '), '--server', t.address], {
          SEPP_API_KEY: adminKey,
        });
        assert.equal(run.code, 0, `${doc}: ${command}: ${run.stderr}`);
        assert.equal(run.stdout, shown.replaceAll('/etc/sepp/sepp.toml', t.configFile), `${doc}: ${command}`);
        ran++;
      }
    }
  }
  assert.equal(ran, 3, 'one check in configuration.md, a check and a reload in cli.md');
});

test('the downgrade examples of docs/configuration.md and docs/cli.md print what the docs show', async () => {
  const emails = '[queues.emails]\nmax_attempts = 5\n';
  // What runs, and the file the example's commands reload.
  const examples = {
    // The only API key, ci, gone from the file.
    'configuration.md': {
      running: apiKeysToml([{ name: 'ci', role: 'admin', key: adminKey }]) + emails,
      file: emails,
    },
    // The key deploy raised from producer to admin.
    'cli.md': {
      running: keys + deploy('producer') + emails,
      file: keys + deploy('admin') + emails,
    },
  };
  let ran = 0;
  for (const [doc, { running, file }] of Object.entries(examples)) {
    t.writeConfig(running);
    assert.deepEqual((await t.server.reload({ actor: 'test', allowSecurityDowngrade: true })).problems, []);
    t.writeConfig(file);
    for (const steps of sessions(doc, 'sepp config reload --allow-security-downgrade')) {
      for (const { command, shown } of steps) {
        const run = await sepp([...command.slice('sepp '.length).split(' '), '--server', t.address], {
          SEPP_API_KEY: adminKey,
        });
        // A refusal's lines go to stderr (exit 1), as the terminal shows them.
        const printed = run.code === 0 ? run.stdout : run.stderr;
        assert.equal(printed, shown.replaceAll('/etc/sepp/sepp.toml', t.configFile), `${doc}: ${command}`);
        ran++;
      }
    }
  }
  assert.equal(ran, 3, 'a refusal and a reload in configuration.md, a reload in cli.md');
  t.writeConfig(keys + emails);
  assert.equal((await t.server.reload({ actor: 'test' })).applied, true);
});
