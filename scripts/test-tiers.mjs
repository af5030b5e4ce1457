// The two tiers of tests (STYLE.md, "Tests"): the fast tier runs in-process —
// engine, store, config, rpc, admin and SDK tests against servers in the test's own
// process — and is the inner loop (`npm run test:fast`); the system tier starts
// something (`npm run test:system`): `sepp` or other processes, a browser, a build —
// or runs a long loop: crash loops, fuzzers, the engine's model-based test. `npm test`
// runs both.
//
// A file is in the system tier because of what it starts or loops through, written
// next to it below; every other file is in the fast tier. In a fast-tier file the
// helpers that start `sepp`, a server process or a browser refuse
// (tests/helpers/test-run.ts), so a file that starts to need one says so at once:
// list it here.

export const tiers = ['fast', 'system'];

/**
 * What each system-tier file starts; `bundle` when it runs `sepp` (the run's one bundle),
 * `executable` when it runs the single executable (the run's one build of it), `sdk package`
 * when it reads the SDK's npm pack tarball (the run's one pack of it); two of them, `executable,
 * sdk package: …`.
 * `sepp` commands run in-process unless their test needs a process (tests/helpers/cli.ts
 * says which), and every one runs from the bundle with SEPP_TEST_CLI=process.
 */
export const systemTier = {
  'tests/admin/browser-bulk-long.test.ts': 'Chromium',
  'tests/admin/browser-bulk-matching.test.ts': 'Chromium',
  'tests/admin/browser-errors.test.ts': 'Chromium',
  'tests/admin/browser-groups.test.ts': 'Chromium',
  'tests/admin/browser-phone-buttons.test.ts': 'Chromium',
  'tests/admin/browser-history.test.ts': 'Chromium',
  'tests/admin/browser-queue-pages.test.ts': 'Chromium',
  'tests/admin/browser-liveness.test.ts': 'Chromium and a server process it stops with SIGSTOP',
  'tests/admin/browser-operator.test.ts': 'Chromium',
  'tests/admin/browser-selected.test.ts': 'Chromium',
  'tests/admin/browser-push.test.ts': 'Chromium and a push receiver',
  'tests/admin/browser-round3.test.ts': 'Chromium',
  'tests/admin/browser-workflows.test.ts': 'Chromium',
  'tests/admin/browser-batches.test.ts': 'Chromium',
  'tests/admin/browser.test.ts': 'Chromium',
  'tests/admin/queue-settings-browser.test.ts': 'Chromium',
  'tests/admin/schedules-browser.test.ts': 'Chromium',
  'tests/admin/browser-schedule-times.test.ts': 'Chromium',
  'tests/bench/pages-per-commit.test.ts': 'a benchmark process under tsx',
  'tests/bench/pg-peers.test.ts': 'PostgreSQL clusters for pg-boss and graphile-worker',
  'tests/bench/processes.test.ts': 'a node process through the benchmark harness',
  'tests/bench/upgrade-busy.test.ts': 'a benchmark process under tsx, with a PostgreSQL cluster',
  'tests/cli/admin-commands.test.ts': 'bundle: sepp in a pseudo-terminal (python3)',
  'tests/cli/errors.test.ts': 'bundle: sepp commands and servers',
  'tests/cli/first-run.test.ts': 'bundle: sepp commands on a first run',
  'tests/client/cli-bulk.test.ts': 'bundle: sepp commands',
  'tests/client/cli-job-control-docs.test.ts': 'bundle: sepp commands',
  'tests/client/cli-job-control.test.ts': 'bundle: sepp commands',
  'tests/client/cli-outcomes.test.ts': 'bundle: sepp commands',
  'tests/client/cli-paging.test.ts': 'bundle: sepp commands',
  'tests/client/cli-workflows.test.ts': 'bundle: sepp commands',
  'tests/client/cli.test.ts': 'bundle: sepp commands',
  'tests/client/examples.test.ts':
    'executable, sdk package: the single executable, npm install of the tarball, node',
  'tests/client/flow-control-docs.test.ts': 'bundle: sepp commands',
  'tests/client/reference-docs.test.ts':
    'sdk package: tsc, the reference as a program under tsx, the tarball of npm pack',
  'tests/client/reload-cli.test.ts': 'bundle: sepp commands and server processes',
  'tests/client/schedules-docs.test.ts': 'bundle: sepp commands, node and python3 examples',
  'tests/cli/heap-growth.test.ts': 'node processes that churn their heap, with and without the limit',
  'tests/config/file-permissions.test.ts': 'bundle: sepp config check',
  'tests/config/tls-files.test.ts': 'bundle: sepp config check, openssl',
  'tests/engine/crash-cancel.test.ts': 'a crash loop of engine child processes',
  'tests/engine/crash.test.ts': 'a crash loop of engine child processes',
  'tests/engine/crash-workflows.test.ts': 'a crash loop of engine child processes',
  'tests/faults/crash-loop.test.ts': 'bundle: a crash loop of server processes',
  'tests/faults/durability-per-queue.test.ts': 'bundle: a server process, under strace, then kill -9',
  'tests/faults/disk-full.test.ts': 'a tmpfs mount (as root)',
  'tests/faults/load.test.ts': 'bundle: a server process under load',
  'tests/faults/lost-files.test.ts': 'bundle: server processes, killed with SIGKILL, and sepp backup',
  'tests/faults/schedule-crash.test.ts': 'bundle: a crash loop of server processes',
  'tests/faults/slow-clients.test.ts': 'bundle: a server process',
  'tests/faults/slow-subscriber.test.ts': 'bundle: a server process',
  'tests/faults/unauthenticated-flood.test.ts': 'bundle: a server process',
  'tests/faults/worker-death.test.ts': 'bundle: a server process and worker processes',
  'tests/fuzz/admin-http-fuzz.test.ts': 'a fuzz loop over every admin route (SEPP_FUZZ_RUNS)',
  'tests/fuzz/config-fuzz.test.ts': 'bundle: sepp config check',
  'tests/fuzz/http-api-fuzz.test.ts': 'a fuzz loop over every HTTP API route (SEPP_FUZZ_RUNS)',
  'tests/fuzz/rpc-fuzz.test.ts': 'a fuzz loop over every RPC (SEPP_FUZZ_RUNS)',
  'tests/fuzz/stream-fuzz.test.ts': 'a fuzz loop of stream sequences (SEPP_STREAM_FUZZ_RUNS)',
  'tests/http/docs.test.ts': "bash running docs/http.md's curl and jq lines and shell worker",
  'tests/interop/error-codes.test.ts': "python3, reading the Python client's codes",
  'tests/interop/python-client.test.ts':
    'bundle: python3 — a venv, pytest against sepp servers (two on a PostgreSQL cluster), mypy',
  'tests/packaging/checkout-commands.test.ts': 'npm start and npx sepp from the sources',
  'tests/packaging/esbuild-package-files.test.ts': 'an esbuild bundle run by node',
  'tests/packaging/litestream-drop-in.test.ts': 'bundle: sepp and Litestream under a systemd stand-in',
  'tests/packaging/operations-sql.test.ts': 'bundle: sepp backup, sqlite3',
  'tests/packaging/readme-first-job.test.ts': 'npm start, npx sepp and npx tsx from the sources',
  'tests/packaging/sea-smoke.test.ts': 'executable: the single executable, copied alone',
  'tests/packaging/systemd-notify.test.ts': 'bundle: a server process, systemd-notify',
  'tests/packaging/systemd-unit.test.ts': 'systemd-analyze',
  'tests/push/push-crash.test.ts': 'bundle: server processes killed with SIGKILL mid-push',
  'tests/replication/litestream-version.test.ts': 'the Litestream binary',
  'tests/replication/litestream.test.ts': 'bundle: Litestream and server processes',
  'tests/rpc/backup.test.ts': 'bundle: sepp backup',
  'tests/rpc/buf-curl.test.ts': 'buf curl (npm @bufbuild/buf)',
  'tests/rpc/gen-fresh.test.ts': 'protoc and the code generators',
  'tests/rpc/grpc-logs.test.ts': 'bundle: a server process',
  'tests/rpc/sigterm.test.ts': 'bundle: a server process',
  'tests/rpc/stream-resets.test.ts':
    'a loop of 1,200 cancelled calls paced to the reset bound of a connection (33 a second), and one past it',
  'tests/runner/check-layers.test.ts': 'scripts/check-layers.mjs in node, on fixture trees',
  'tests/runner/run-tests.test.ts': 'the test runner on fixture files',
  'tests/runner/test-deps.test.ts': 'scripts/test-deps.sh in a shell, as nobody too',
  'tests/security/flow-read-postgres.test.ts': 'a PostgreSQL cluster (postgresql-15)',
  'tests/store/conformance/postgres.test.ts': 'a PostgreSQL cluster (postgresql-15)',
  'tests/store/conformance/postgres-model.test.ts':
    'a PostgreSQL cluster, and a model-based loop of 15 random runs of 20 steps (SEPP_MODEL_RUNS)',
  'tests/store/conformance/sqlite-model.test.ts':
    'a model-based loop: 300 random runs of 20 steps (SEPP_MODEL_RUNS)',
  'tests/engine/workflows-model.test.ts':
    'a model-based loop of 400 random workflow steps (SEPP_WORKFLOW_MODEL_STEPS)',
  'tests/engine/workflows-model-postgres.test.ts':
    'a PostgreSQL cluster, and a model-based loop of 150 random workflow steps (SEPP_WORKFLOW_MODEL_STEPS), twice',
  'tests/engine/batch-statements-postgres.test.ts': 'a PostgreSQL cluster',
  'tests/engine/give-back-bound-postgres.test.ts': 'a PostgreSQL cluster',
  'tests/store/postgres-batch-sweep.test.ts': 'a PostgreSQL cluster',
  'tests/store/data-dir-lock.test.ts': 'bundle: server processes',
  'tests/store/postgres-enqueue-function.test.ts':
    'a PostgreSQL cluster (postgresql-15), python3 with psycopg2',
  'tests/store/postgres-failover.test.ts':
    'PostgreSQL primaries and streaming standbys (postgresql-15), each primary killed with -9, 1 + 1 rounds (test:long: 5 + 3)',
  'tests/store/postgres-helper.test.ts': 'PostgreSQL clusters (postgresql-15)',
  'tests/store/postgres-bulk-keys.test.ts': 'a PostgreSQL cluster (postgresql-15)',
  'tests/store/postgres-queue-miss.test.ts': 'a PostgreSQL cluster (postgresql-15)',
  'tests/store/postgres-dependency-failures.test.ts': 'a PostgreSQL cluster (postgresql-15)',
  'tests/store/postgres-read-queue.test.ts': 'a PostgreSQL cluster (postgresql-15)',
  'tests/store/postgres-dependents.test.ts': 'a PostgreSQL cluster (postgresql-15)',
  'tests/store/postgres-batch-owners.test.ts': 'a PostgreSQL cluster (postgresql-15)',
  'tests/store/postgres-batch-death.test.ts': 'a PostgreSQL cluster (postgresql-15)',
  'tests/store/postgres-review17a.test.ts': 'a PostgreSQL cluster (postgresql-15)',
  'tests/store/postgres-serve.test.ts': 'a PostgreSQL cluster (postgresql-15)',
  'tests/store/postgres-server-kill.test.ts':
    'bundle: two server processes on a PostgreSQL cluster, one killed with -9 (postgresql-15)',
  'tests/store/postgres-servers.test.ts': 'a PostgreSQL cluster, killed with -9 once (postgresql-15)',
  'tests/store/postgres-suites.test.ts':
    'a PostgreSQL cluster (postgresql-15) for six rpc and client files run on that store',
  'tests/store/postgres-writer.test.ts': 'a PostgreSQL cluster (postgresql-15)',
  'tests/store/shared-locking.test.ts': 'sqlite3 and node processes',
};

/**
 * Files that run in a process of their own, not in a group of their tier (scripts/
 * test-groups.mjs), because of what they change for the whole process, written next to
 * each: the files after them in a group would run with it.
 */
export const runsAlone = {
  'tests/rpc/stream-errors.test.ts':
    'adds process-wide uncaughtException and unhandledRejection handlers, which would swallow the errors of the files after it',
  'tests/client/trace.test.ts': "sets and disables OpenTelemetry's global context, propagator and tracer",
  'tests/store/postgres-suites.test.ts':
    'sets SEPP_TEST_STORE=postgres for the whole process and imports six rpc and client files under it',
  'tests/fuzz/stream-fuzz.test.ts':
    'adds process-wide uncaughtException and unhandledRejection handlers while it runs, which would swallow a late error of the file before it',
};

/** `fast` or `system`, for a path relative to the repository. */
export function tierOf(file) {
  return Object.hasOwn(systemTier, file) ? 'system' : 'fast';
}

/** True when the file drives Chromium over the admin UI, so the run builds ui/dist once. */
export function startsChromium(file) {
  return systemTier[file]?.startsWith('Chromium') ?? false;
}

/** What the run makes once for the file: its entry's words before a colon, `executable, sdk package: …`. */
function buildsOf(file) {
  const [head, ...rest] = systemTier[file]?.split(':') ?? [];
  return rest.length === 0 ? [] : (head ?? '').split(', ');
}

/** True when the file runs `sepp` itself, so the run bundles it once. */
export function needsBundle(file) {
  return buildsOf(file).includes('bundle');
}

/** True when the file reads the SDK's `npm pack` tarball, so the run packs it once. */
export function needsSdkPackage(file) {
  return buildsOf(file).includes('sdk package');
}

/** True when the file runs the single executable, so the run builds it once. */
export function needsExecutable(file) {
  return buildsOf(file).includes('executable');
}
