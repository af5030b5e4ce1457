/**
 * `sepp status`: what the server is and how it runs — version, uptime, which process
 * answered (its instance id, host and addresses), the store
 * (SQLite, or PostgreSQL with where, whether it hears the other servers, its
 * replication: docs/replication.md, and its bounds), the
 * default durability, its protocol features, and how many queues and workers it has now. While the store is
 * unavailable it still shows the server and where its store is, says the store is
 * unavailable, and exits 3.
 */
import type { Argv } from 'yargs';
import { SeppError } from '../../../clients/typescript/src/index.ts';
import { CliError, exitCodes } from '../failure.ts';
import type { CliIo } from '../io.ts';
import {
  print,
  printJson,
  runWithClient,
  storeUnavailable,
  storeUnavailableMessage,
  wantsJson,
  withConnection,
} from './connection.ts';
import { age } from './format.ts';

export function registerStatusCommand(parser: Argv, io: CliIo): void {
  parser.command(
    'status',
    'Show the server: version, uptime, store, durability, queues and workers',
    (y) => withConnection(io, y),
    (args) =>
      runWithClient(io, args, async (client) => {
        // The queues and workers are read from the store: while it is unavailable (PostgreSQL
        // restarting), the server still answers what it is and where its store is, which is
        // what is wanted then.
        const [info, queues, workers] = await Promise.all([
          client.getServerInfo(),
          unlessStoreDown(client.listQueues()),
          unlessStoreDown(client.listWorkers()),
        ]);
        const storeDown = [queues, workers].find((r) => r instanceof SeppError);
        const queueCount = queues instanceof SeppError ? null : queues.length;
        const workerCount = workers instanceof SeppError ? null : workers.length;
        // The status is printed, then the command fails: a script sees the outage in the exit code.
        const failIfDown = () => {
          if (storeDown === undefined) return;
          throw new CliError(storeUnavailableMessage(args.server, storeDown), exitCodes.unreachable);
        };
        if (wantsJson(args)) {
          printJson(io, {
            ...info,
            queues: queueCount,
            workers: workerCount,
            ...(storeDown === undefined ? {} : { storeUnavailable: storeDown.message }),
          });
          failIfDown();
          return;
        }
        const { store } = info;
        const commit = info.gitCommit === '' ? '' : ` (commit ${info.gitCommit.slice(0, 12)})`;
        const upMs = Math.max(0, info.serverTime.getTime() - info.startedAt.getTime());
        // A key other than an admin key for every queue is told the store's kind alone.
        const storeLine =
          store.kind === 'postgres' && store.host === ''
            ? 'postgres (where it is: shown to an admin key for every queue)'
            : store.kind === 'postgres'
              ? `postgres ${store.host} database ${store.database} schema ${store.schema}; other servers' signals: ` +
                `${store.signalsConnected ? 'connected' : 'not connected (polling once a second)'}; ` +
                `replication: ${store.replication} (${store.standbys} standby${store.standbys === 1 ? '' : 's'})`
              : `${store.kind} (embedded)`;
        // The PostgreSQL store's bounds, by the settings that set them (a server that predates them sends 0).
        const boundsLine =
          store.kind === 'postgres' && store.poolSize > 0
            ? [
                `bounds      store.pool_size ${store.poolSize} (one writer, the rest read), ` +
                  `store.max_waiting_reads ${store.maxWaitingReads}, store.max_waiting_reads_per_key ${store.maxWaitingReadsPerKey}, ` +
                  `store.statement_timeout_ms ${store.statementTimeoutMs}`,
              ]
            : [];
        const { identity } = info;
        // Which process answered (servers sharing one PostgreSQL behind a load balancer); a
        // server that predates it sends none, and so does one to a key that may not see it.
        const instanceLine =
          identity.instanceId === ''
            ? []
            : [
                `instance    ${identity.instanceId} on ${identity.hostName} (pid ${identity.pid}); listens on ` +
                  `gRPC ${identity.grpcAddress}, admin ${identity.adminAddress}, HTTP ${identity.httpAddress || 'off'}`,
              ];
        print(
          io,
          [
            `server      sepp ${info.version}${commit}, up ${age(upMs)} (since ${info.startedAt.toISOString()})`,
            ...instanceLine,
            `store       ${storeLine}${storeDown === undefined ? '' : `; unavailable now: ${storeDown.message}`}`,
            ...boundsLine,
            `durability  ${info.durability} (the default; a queue may set its own)`,
            // A server older than the list sends none (docs/protocol.md, "Features").
            `features    ${info.features.length === 0 ? 'none named (an older server)' : info.features.join(', ')}`,
            queueCount !== null
              ? `queues      ${queueCount}${info.strictQueues ? ' (strict: only declared queues take jobs)' : ''}`
              : 'queues      unknown: the store is unavailable',
            workerCount === null
              ? 'workers     unknown: the store is unavailable'
              : `workers     ${workerCount} connected`,
          ].join('\n'),
        );
        failIfDown();
      }),
  );
}

/** A read's answer, or its failure when the server's store is unavailable (any other failure is thrown). */
function unlessStoreDown<T>(read: Promise<T>): Promise<T | SeppError> {
  return read.catch((error: unknown) => {
    const down = storeUnavailable(error);
    if (down === undefined) throw error;
    return down;
  });
}
