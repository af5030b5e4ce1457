/**
 * clients/typescript/REFERENCE.md, the SDK's reference that the package ships:
 * - its `ts` blocks are one program: hoisted imports, the rest run in order, type-checked
 *   against the SDK and run against a real server;
 * - it names every option, event, error code and rejection reason the SDK declares, and
 *   every public method of the client and its groups;
 * - the package that `npm pack` makes ships it, and every link of the README and the
 *   reference that npm installs points at a file in the package (or is absolute).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { seppErrorCodes, statusOfRejection } from '../../clients/typescript/src/errors.ts';
import { repoRoot, sdkDir } from '../helpers/sdk-package.ts';
import { startTestServer, type TestServer } from '../helpers/server.ts';

const reference = readFileSync(join(sdkDir, 'REFERENCE.md'), 'utf8');
const sdkIndex = join(sdkDir, 'src', 'index.ts');

/** The reference's `ts` blocks as one module: imports hoisted, the rest in an async main(). */
function referenceProgram(): string {
  const blocks = [...reference.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1] ?? '');
  const names = new Set<string>();
  const body: string[] = [];
  for (const block of blocks) {
    for (const line of block.split('\n')) {
      const imported = /^import \{ (.*) \} from '@sepp-queue\/client';$/.exec(line);
      if (imported === null) body.push(`  ${line}`);
      else for (const name of (imported[1] ?? '').split(', ')) names.add(name);
    }
  }
  return [
    `import { ${[...names].join(', ')} } from '${sdkIndex}';`,
    '',
    'async function main(): Promise<void> {',
    ...body,
    '}',
    '',
    "main().then(() => console.log('the reference ran to its end'), (error: unknown) => {",
    '  console.error(error);',
    '  process.exit(1);',
    '});',
    '',
  ].join('\n');
}

/** Property names of an exported interface in an SDK source file. */
function fieldsOf(file: string, name: string): string[] {
  const text = readFileSync(join(sdkDir, 'src', file), 'utf8');
  const body = new RegExp(`export interface ${name}\\b[^{]*\\{([\\s\\S]*?)\\n\\}`).exec(text)?.[1];
  assert.ok(body, `${file} declares ${name}`);
  return [...body.matchAll(/^ {2}(?:readonly )?(\w+)\??:/gm)].map((m) => m[1] ?? '');
}

/** Public methods of an exported class in an SDK source file (not `@internal` ones). */
function methodsOf(file: string, name: string): string[] {
  const text = readFileSync(join(sdkDir, 'src', file), 'utf8');
  const body = new RegExp(`export class ${name}\\b[^{]*\\{([\\s\\S]*?)\\n\\}`).exec(text)?.[1] ?? '';
  assert.ok(body !== '', `${file} declares ${name}`);
  return [
    ...body.matchAll(
      /(\/\*\*[\s\S]*?\*\/\n)?^ {2}(?:static |async |get )?(?:\*)?([a-zA-Z]\w*)(?:<[^>]*>)?\(/gm,
    ),
  ]
    .filter((m) => !(m[1] ?? '').includes('@internal'))
    .map((m) => m[2] ?? '')
    .filter((m) => m !== 'constructor');
}

/** Public readonly fields of an exported class in an SDK source file. */
function classFieldsOf(file: string, name: string): string[] {
  const text = readFileSync(join(sdkDir, 'src', file), 'utf8');
  const body = new RegExp(`export class ${name}\\b[^{]*\\{([\\s\\S]*?)\\n\\}`).exec(text)?.[1] ?? '';
  assert.ok(body !== '', `${file} declares ${name}`);
  return [...body.matchAll(/^ {2}readonly (\w+):/gm)].map((m) => m[1] ?? '');
}

describe('clients/typescript/REFERENCE.md', { timeout: 300_000 }, () => {
  let t: TestServer;
  let work = '';
  before(async () => {
    t = await startTestServer();
    work = mkdtempSync(join(tmpdir(), 'sepp-reference-'));
  });
  after(async () => {
    await t?.dispose();
    rmSync(work, { recursive: true, force: true });
  });

  test('its examples type-check against the SDK and run, in order, against a server', async () => {
    const program = join(work, 'reference.mts');
    writeFileSync(program, referenceProgram());
    writeFileSync(
      join(work, 'tsconfig.json'),
      JSON.stringify({
        extends: join(repoRoot, 'tsconfig.json'),
        compilerOptions: { typeRoots: [join(repoRoot, 'node_modules', '@types')] },
        include: [program],
      }),
    );
    const tsc = join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
    try {
      execFileSync(process.execPath, [tsc, '-p', join(work, 'tsconfig.json')], { encoding: 'utf8' });
    } catch (error) {
      const e = error as { stdout?: string };
      assert.fail(`the reference's examples do not type-check:\n${e.stdout ?? ''}`);
    }
    const child = spawn(process.execPath, ['--import', 'tsx', program], {
      cwd: repoRoot,
      env: { ...process.env, SEPP_SERVER: t.address, SEPP_API_KEY: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000);
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    clearTimeout(timer);
    assert.equal(code, 0, output);
    assert.match(output, /the reference ran to its end\n$/);
    assert.match(output, /dead_lettered no such domain: nobody@example\.invalid/);
  });

  test('it names every option, event, error code and rejection reason the SDK declares', () => {
    const declared: Record<string, [file: string, names: string[]]> = {
      ConnectOptions: ['connection.ts', fieldsOf('connection.ts', 'ConnectOptions')],
      RetryOptions: ['connection.ts', fieldsOf('connection.ts', 'RetryOptions')],
      TlsOptions: ['connection.ts', fieldsOf('connection.ts', 'TlsOptions')],
      EnqueueOptions: ['job-types.ts', fieldsOf('job-types.ts', 'EnqueueOptions')],
      JobSpec: ['job-types.ts', fieldsOf('job-types.ts', 'JobSpec')],
      ReserveOptions: ['job-types.ts', fieldsOf('job-types.ts', 'ReserveOptions')],
      NackOptions: ['job-types.ts', fieldsOf('job-types.ts', 'NackOptions')],
      AckOptions: ['job-types.ts', fieldsOf('job-types.ts', 'AckOptions')],
      CallOptions: ['job-types.ts', fieldsOf('job-types.ts', 'CallOptions')],
      QueueActionOptions: ['job-types.ts', fieldsOf('job-types.ts', 'QueueActionOptions')],
      WorkerOptions: ['worker-options.ts', fieldsOf('worker-options.ts', 'WorkerOptions')],
      WorkerEvents: ['worker-options.ts', fieldsOf('worker-options.ts', 'WorkerEvents')],
      WorkerLogger: ['worker-options.ts', ['info', 'warn', 'error']],
      WaitOptions: ['wait.ts', fieldsOf('wait.ts', 'WaitOptions')],
      EventsOptions: ['events.ts', fieldsOf('events.ts', 'EventsOptions')],
      JobEvent: ['events.ts', fieldsOf('events.ts', 'JobEvent')],
      ScheduleDefinition: ['schedules.ts', fieldsOf('schedules.ts', 'ScheduleDefinition')],
      ScheduleJob: ['schedules.ts', fieldsOf('schedules.ts', 'ScheduleJob')],
      JobFilter: ['control-types.ts', fieldsOf('control-types.ts', 'JobFilter')],
      JobChanges: ['control-types.ts', fieldsOf('control-types.ts', 'JobChanges')],
      CancelJobsResult: ['control-types.ts', fieldsOf('control-types.ts', 'CancelJobsResult')],
      DeadLetterQuery: ['queue-types.ts', fieldsOf('queue-types.ts', 'DeadLetterQuery')],
      AuditQuery: ['control-types.ts', fieldsOf('control-types.ts', 'AuditQuery')],
      SeppClient: ['client.ts', methodsOf('client.ts', 'SeppClient')],
      Jobs: ['client-jobs.ts', methodsOf('client-jobs.ts', 'Jobs')],
      Queues: ['client-queues.ts', methodsOf('client-queues.ts', 'Queues')],
      DeadLetters: ['client-dead-letters.ts', methodsOf('client-dead-letters.ts', 'DeadLetters')],
      AuditLog: ['client-audit.ts', methodsOf('client-audit.ts', 'AuditLog')],
      Schedules: ['schedules.ts', methodsOf('schedules.ts', 'Schedules')],
      Worker: ['worker.ts', methodsOf('worker.ts', 'Worker')],
      SeppErrorCode: ['errors.ts', [...seppErrorCodes]],
      RejectionReason: ['errors.ts', Object.keys(statusOfRejection)],
    };
    const missing: string[] = [];
    for (const [what, [file, names]] of Object.entries(declared)) {
      assert.ok(names.length > 0, `found the members of ${what} in ${file}`);
      for (const name of names) {
        if (!new RegExp(`\`[^\`]*\\b${name}\\b[^\`]*\``).test(reference))
          missing.push(`${what}.${name} (${file})`);
      }
    }
    assert.deepEqual(missing, [], 'REFERENCE.md names each of these');
  });

  test("its table of the client's options has a row for each, in one table", () => {
    // A row written after the paragraph that follows the table is no row: it renders as text.
    const table = /\n\| option +\| default +\| meaning +\|\n((?:\|.*\n)+)/.exec(reference)?.[1];
    assert.ok(table, 'REFERENCE.md has the table of SeppClient.connect options');
    const rows = [...table.matchAll(/^\| `(\w+)` +\|/gm)].map((m) => m[1]);
    assert.deepEqual(
      fieldsOf('connection.ts', 'ConnectOptions').filter((name) => !rows.includes(name)),
      [],
      'every ConnectOptions field is a row of the table',
    );
  });

  test('its list of what a handler gets names every field of a leased job', () => {
    const handlers = /\*\*Handlers\.\*\* A handler gets a `WorkerJob`: ([\s\S]*?)\n\n/.exec(reference)?.[1];
    assert.ok(handlers, 'REFERENCE.md has the Handlers paragraph');
    const fields = [...classFieldsOf('jobs.ts', 'LeasedJob'), ...classFieldsOf('worker-job.ts', 'WorkerJob')];
    assert.ok(
      fields.includes('batchId') && fields.includes('data'),
      `found the fields: ${fields.join(', ')}`,
    );
    assert.deepEqual(
      fields.filter((f) => !handlers.includes(`\`${f}\``)),
      [],
      'the Handlers paragraph names each field',
    );
  });

  test('npm pack ships it, and every link of the README and the reference resolves in the package', () => {
    const dest = mkdtempSync(join(work, 'pack-'));
    // The run's pack of the SDK (scripts/run-tests.mjs), or one of its own.
    let tarball = process.env.SEPP_TEST_SDK_TARBALL;
    if (tarball === undefined) {
      execFileSync('npm', ['pack', sdkDir, '--pack-destination', dest, '--silent'], {
        cwd: dest,
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      tarball = execFileSync('sh', ['-c', `ls ${dest}/*.tgz`], { encoding: 'utf8' }).trim();
    }
    const files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' })
      .split('\n')
      .filter((f) => f !== '')
      .map((f) => f.replace(/^package\//, ''));
    for (const doc of ['README.md', 'REFERENCE.md']) {
      assert.ok(files.includes(doc), `the package ships ${doc}`);
      execFileSync('tar', ['-xzf', tarball, '-C', dest, `package/${doc}`]);
      const text = readFileSync(join(dest, 'package', doc), 'utf8');
      for (const [, target = ''] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^https?:\/\//.test(target)) continue;
        const path = target.split('#')[0] ?? '';
        assert.ok(files.includes(path), `${doc} links to ${target}, which the package does not ship`);
      }
    }
  });
});
