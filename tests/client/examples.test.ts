/**
 * docs/quickstart.md, followed as a new user follows it, in a fresh directory outside the
 * repository: the server executable built from the checkout, the SDK packed with
 * `npm pack` and installed from the tarball into a project with no TypeScript and no tsx,
 * the documented ES module producer and CommonJS worker run with plain node against that
 * server, and the TypeScript example type-checked against the installed package's
 * declarations. Each code block of the quickstart equals the marked region of its
 * example file, and each command it shows is run here (the list below must match).
 *
 * Where a command cannot run literally in a test, its equivalent runs:
 * - `npm ci`: the suite runs in a checkout where it has been run (nothing here could
 *   run without it); it is not repeated, as it would replace node_modules under every
 *   other test;
 * - `npm run build`: as `npm run build -- --out-dir DIR` into a temporary directory,
 *   not the checkout's dist/ — or SEPP_SEA_BINARY, the executable scripts/run-tests.mjs
 *   built once for the run with that same `node build.mjs` (or one CI built already);
 * - `npm pack "$SEPP/clients/typescript"`: the tarball scripts/run-tests.mjs packed once for
 *   the run with that same `npm pack` of that directory (SEPP_TEST_SDK_TARBALL; the pack builds
 *   the SDK, ~2.5 s of CPU), copied into the project where `npm pack` writes it;
 * - `dist/sepp serve`: the same executable with SEPP_GRPC_LISTEN/SEPP_ADMIN_LISTEN set to
 *   port 0, since tests never take fixed ports; the examples and `sepp queues` get its
 *   address from SEPP_SERVER, as the quickstart says they do;
 * - npm runs offline, with a lockfile that pins the SDK's dependencies to the
 *   repository's (tests/helpers/sdk-package.ts says why).
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import {
  installedPackages,
  mib,
  repoRoot,
  sdkPackage,
  sdkTarballName,
  seedLockfile,
  treeBytes,
} from '../helpers/sdk-package.ts';
import { captureOutput } from '../helpers/secret-log.ts';
import { run, userEnv } from '../helpers/user-commands.ts';

const read = (path: string) => readFileSync(join(repoRoot, path), 'utf8');
const quickstart = read('docs/quickstart.md');

function region(path: string, name: string): string {
  const match = new RegExp(`// #region ${name}\\n([\\s\\S]*?)// #endregion ${name}`).exec(read(path));
  assert.ok(match?.[1], `${path} has no region ${name}`);
  return match[1];
}

/** The quickstart's example blocks: which file's region each copies, and its code. */
const exampleBlocks = [...quickstart.matchAll(/<!-- (\S+)#(\S+) -->\n```js\n([\s\S]*?)```/g)].map((b) => ({
  path: b[1]!,
  name: b[2]!,
  code: b[3]!,
}));

/** Every command line of the quickstart's shell blocks, in order. */
const shownCommands = [...quickstart.matchAll(/```sh\n([\s\S]*?)```/g)].flatMap((b) =>
  b[1]!.split('\n').filter((l) => l.trim() !== ''),
);

/** The commands this file runs (some as the equivalents above), in the quickstart's order. */
const checkoutBuild = ['npm ci', 'npm run build', 'dist/sepp --version'];
const serve = 'dist/sepp serve';
const installSdk = [
  'mkdir my-app && cd my-app',
  'npm init -y',
  'npm pkg set allowScripts.protobufjs=false --json',
  'npm pack "$SEPP/clients/typescript"',
  `npm install ./${sdkTarballName}`,
];
const runExamples = ['node worker.cjs', 'node producer.mjs'];
const queuesCommand = 'dist/sepp queues';

describe('docs/quickstart.md', () => {
  test('each code block is the marked region of its example file', () => {
    assert.deepEqual(
      exampleBlocks.map((b) => b.path),
      ['examples/producer.mjs', 'examples/worker.cjs'],
    );
    for (const { path, name, code } of exampleBlocks) {
      assert.equal(code, region(path, name), `the quickstart's copy of ${path} is out of date`);
    }
  });

  test('every command it shows is one this file runs, or stands in for (see the top)', () => {
    assert.deepEqual(shownCommands, [...checkoutBuild, serve, ...installSdk, ...runExamples, queuesCommand]);
  });
});

describe('the quickstart, followed in a fresh directory outside the repository', { timeout: 600_000 }, () => {
  let work = '';
  let exe = '';
  let server: ChildProcess | undefined;
  let address = '';
  let app = '';
  const env = () => userEnv({ SEPP: repoRoot, SEPP_SERVER: address });

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'sepp-quickstart-'));
    // `npm run build`, into a directory of its own.
    exe = process.env.SEPP_SEA_BINARY ?? join(work, 'dist', 'sepp');
    if (process.env.SEPP_SEA_BINARY === undefined) {
      const build = await run(
        'npm',
        ['run', 'build', '--', '--out-dir', join(work, 'dist')],
        repoRoot,
        userEnv(),
      );
      assert.equal(build.code, 0, `npm run build failed:\n${build.stdout}${build.stderr}`);
    }
  });
  after(async () => {
    if (server !== undefined && server.exitCode === null && server.signalCode === null) {
      server.kill('SIGKILL');
    }
    rmSync(work, { recursive: true, force: true });
  });

  test('dist/sepp --version runs the executable', async () => {
    const version = await run(exe, ['--version'], work, userEnv());
    assert.equal(version.code, 0, version.stderr);
    assert.match(version.stdout, /^sepp \d+\.\d+\.\d+ \(/);
  });

  test('dist/sepp serve starts the server', async () => {
    const serverDir = join(work, 'server');
    mkdirSync(serverDir);
    const child = spawn(exe, ['serve'], {
      cwd: serverDir,
      env: userEnv({
        SEPP_GRPC_LISTEN: '127.0.0.1:0',
        SEPP_ADMIN_LISTEN: '127.0.0.1:0',
        SEPP_LOG_FORMAT: 'json',
      }),
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    server = child;
    const capture = captureOutput('process');
    let logs = '';
    address = await new Promise<string>((resolve, reject) => {
      child.stderr?.on('data', (chunk: Buffer) => {
        capture(chunk.toString());
        logs += chunk.toString();
        const started = logs.split('\n').find((l) => l.includes('"server.started"'));
        if (started !== undefined) resolve((JSON.parse(started) as { grpc: string }).grpc);
      });
      child.on('exit', (code) => reject(new Error(`sepp serve exited with ${code}:\n${logs}`)));
    });
    assert.ok(existsSync(join(serverDir, 'sepp-data')), 'the data is in ./sepp-data');
    // The quickstart says what the 32 MiB beside the database is.
    const reserveMiB = statSync(join(serverDir, 'sepp-data', 'sepp.reserve')).size / 1024 / 1024;
    assert.match(quickstart, new RegExp(`\`sepp.reserve\`, a ${reserveMiB} MiB file`));
  });

  test('the SDK installs from its npm pack tarball, with its dependencies only', async () => {
    // The block up to `npm install`, as one shell script (its `cd` holds for what follows);
    // `npm pack` only without the run's pack of the same directory (see the top).
    const packed = process.env.SEPP_TEST_SDK_TARBALL;
    const commands = installSdk.slice(0, packed === undefined ? 4 : 3);
    const upToPack = await run('sh', ['-e', '-c', commands.join('\n')], work, env());
    assert.equal(upToPack.code, 0, `${upToPack.stdout}${upToPack.stderr}`);
    app = join(work, 'my-app');
    if (packed !== undefined) {
      assert.equal(basename(packed), sdkTarballName);
      copyFileSync(packed, join(app, sdkTarballName));
    }
    assert.ok(existsSync(join(app, sdkTarballName)), `npm pack wrote ${sdkTarballName}`);
    seedLockfile(app);
    const install = await run('sh', ['-e', '-c', installSdk[4]!], app, env());
    assert.equal(install.code, 0, `${install.stdout}${install.stderr}`);
    // The quickstart's allowScripts line leaves npm nothing to warn about.
    assert.doesNotMatch(`${install.stdout}${install.stderr}`, /npm warn/i);

    const pkg = JSON.parse(readFileSync(join(app, 'package.json'), 'utf8')) as Record<string, unknown>;
    assert.deepEqual(Object.keys(pkg.dependencies as object), [sdkPackage.name]);
    assert.equal(pkg.devDependencies, undefined);
    const installed = installedPackages(app);
    for (const absent of ['typescript', 'tsx', 'better-sqlite3', 'sepp', '@opentelemetry/api']) {
      assert.ok(!installed.includes(absent), `${absent} is installed in the project`);
    }
    for (const present of [sdkPackage.name, '@grpc/grpc-js', '@bufbuild/protobuf']) {
      assert.ok(installed.includes(present), `${present} is not installed`);
    }
    const sdkBytes = treeBytes(join(app, 'node_modules', sdkPackage.name));
    const allBytes = treeBytes(join(app, 'node_modules'));
    console.log(
      `installed: ${sdkPackage.name} ${mib(sdkBytes)}; node_modules ${mib(allBytes)} in ${installed.length} packages, nested ones included ` +
        `(${installed.join(', ')}); tarball ${mib(treeBytes(join(app, sdkTarballName)))}`,
    );
  });

  test('import and require load one implementation', async () => {
    const check = [
      "const viaRequire = require('@sepp-queue/client');",
      "import('@sepp-queue/client').then((viaImport) => {",
      '  const names = Object.keys(viaImport).sort();',
      "  if (names.length < 5 || names.some((n) => viaImport[n] !== viaRequire[n])) throw new Error('two copies');",
      "  console.log(names.join(' '));",
      '});',
    ].join('\n');
    const result = await run(process.execPath, ['-e', check], app, env());
    assert.equal(result.code, 0, result.stderr);
    assert.match(result.stdout, /\bSeppClient\b.*\bWorker\b/);
  });

  test('the optional entry point @sepp-queue/client/pg loads both ways, without pg installed', async () => {
    const check = [
      "const viaRequire = require('@sepp-queue/client/pg');",
      "import('@sepp-queue/client/pg').then((viaImport) => {",
      "  if (viaImport.enqueueInTransaction !== viaRequire.enqueueInTransaction) throw new Error('two copies');",
      '  console.log(typeof viaImport.enqueueInTransaction);',
      '});',
    ].join('\n');
    const result = await run(process.execPath, ['-e', check], app, env());
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stdout.trim(), 'function');
  });

  test('node worker.cjs runs the jobs node producer.mjs enqueues; dist/sepp queues shows them done', async () => {
    for (const { path, code } of exampleBlocks) writeFileSync(join(app, path.replace('examples/', '')), code);
    const [workerCommand, producerCommand] = runExamples;
    const worker = spawn('sh', ['-c', `exec ${workerCommand}`], { cwd: app, env: env() });
    let workerOut = '';
    const sent = new Promise<void>((resolve, reject) => {
      worker.stdout.on('data', (chunk: Buffer) => {
        workerOut += chunk.toString();
        if (
          workerOut.includes('sending to ada@example.com') &&
          workerOut.includes('sending to grace@example.com')
        )
          resolve();
      });
      worker.on('exit', (code) => reject(new Error(`the worker exited with ${code}: ${workerOut}`)));
    });
    sent.catch(() => {});
    const exited = new Promise<number | null>((resolve) => worker.on('exit', resolve));
    try {
      const producer = await run('sh', ['-c', producerCommand!], app, env());
      assert.equal(producer.code, 0, producer.stderr);
      assert.match(
        producer.stdout,
        /^enqueued \S+ for ada@example\.com\nenqueued \S+ for grace@example\.com\n$/,
      );
      await sent;

      // Both jobs acked: nothing waiting, scheduled, ready, leased or dead (the acks may still be in flight).
      const row = /^emails\s+no\s+0\s+0\s+0\s+0\s+0\s/m;
      let queues = await run('sh', ['-c', queuesCommand.replace('dist/sepp', `"${exe}"`)], app, env());
      for (let i = 0; i < 50 && queues.code === 0 && !row.test(queues.stdout); i++) {
        await new Promise((r) => setTimeout(r, 100));
        queues = await run('sh', ['-c', queuesCommand.replace('dist/sepp', `"${exe}"`)], app, env());
      }
      assert.equal(queues.code, 0, queues.stderr);
      assert.match(queues.stdout, row);
    } finally {
      worker.kill('SIGINT');
    }
    assert.equal(await exited, 0, 'the worker exits 0 after Ctrl-C');
    for (const to of ['ada', 'grace']) {
      assert.equal(
        workerOut.split(`sending to ${to}@example.com`).length - 1,
        1,
        `${to}'s job ran once: ${workerOut}`,
      );
    }
  });

  test('TypeScript: examples/worker.ts type-checks against the installed declarations, as CommonJS and as an ES module', async () => {
    const dir = join(app, 'typecheck');
    mkdirSync(dir);
    // The project is CommonJS (npm init), so worker.ts compiles as CommonJS and worker.mts
    // as an ES module: the `require` and `import` declarations of the package are both used.
    copyFileSync(join(repoRoot, 'examples', 'worker.ts'), join(dir, 'worker.ts'));
    copyFileSync(join(repoRoot, 'examples', 'worker.ts'), join(dir, 'worker.mts'));
    // And a mistake, which must be caught: the types are the package's, not `any`.
    writeFileSync(
      join(dir, 'mistake.ts'),
      "import { SeppClient } from '@sepp-queue/client';\nSeppClient.connect(50051);\n",
    );
    const tsconfig = {
      compilerOptions: {
        module: 'nodenext',
        target: 'es2022',
        strict: true,
        noEmit: true,
        skipLibCheck: false,
        types: ['node'],
        // @types/node comes with protobufjs (a dependency of grpc-js) today; the
        // repository's copy backs it up so the check does not depend on that.
        typeRoots: [join(app, 'node_modules', '@types'), join(repoRoot, 'node_modules', '@types')],
      },
      files: ['worker.ts', 'worker.mts', 'mistake.ts'],
    };
    // One program, one tsc (a second took as long again, mostly reading the same declarations):
    // tsc reports every error of every file, so the mistake's error being the only one says
    // that worker.ts and worker.mts type-check.
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(tsconfig));
    const tsc = join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');

    const checked = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], dir, env());
    assert.notEqual(checked.code, 0);
    const errors = `${checked.stdout}${checked.stderr}`.split('\n').filter((l) => /error TS\d+/.test(l));
    assert.equal(errors.length, 1, `${checked.stdout}${checked.stderr}`);
    assert.match(errors[0] ?? '', /^mistake\.ts\(2,20\): error TS2345: Argument of type 'number'/);
  });

  test('the server stops on SIGTERM', async () => {
    assert.ok(server !== undefined);
    const exited = new Promise<number | null>((resolve) => server!.on('exit', resolve));
    server.kill('SIGTERM');
    assert.equal(await exited, 0);
  });
});
