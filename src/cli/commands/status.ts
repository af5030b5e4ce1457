/**
 * `sepp status`: what the server is and how it runs — version, uptime, the store
 * (SQLite, or PostgreSQL with where, whether it hears the other servers and its
 * replication: docs/replication.md), the
 * default durability, and how many queues and workers it has now.
 */
import type { Argv } from 'yargs';
import type { CliIo } from '../io.ts';
import { print, printJson, runWithClient, wantsJson, withConnection } from './connection.ts';
import { age } from './format.ts';

export function registerStatusCommand(parser: Argv, io: CliIo): void {
  parser.command(
    'status',
    'Show the server: version, uptime, store, durability, queues and workers',
    (y) => withConnection(io, y),
    (args) =>
      runWithClient(io, args, async (client) => {
        const [info, queues, workers] = await Promise.all([
          client.getServerInfo(),
          client.listQueues(),
          client.listWorkers(),
        ]);
        if (wantsJson(args)) {
          printJson(io, { ...info, queues: queues.length, workers: workers.length });
          return;
        }
        const { store } = info;
        const commit = info.gitCommit === '' ? '' : ` (commit ${info.gitCommit.slice(0, 12)})`;
        const upMs = Math.max(0, info.serverTime.getTime() - info.startedAt.getTime());
        const storeLine =
          store.kind === 'postgres'
            ? `postgres ${store.host} database ${store.database} schema ${store.schema}; other servers' signals: ` +
              `${store.signalsConnected ? 'connected' : 'not connected (polling once a second)'}; ` +
              `replication: ${store.replication} (${store.standbys} standby${store.standbys === 1 ? '' : 's'})`
            : `${store.kind} (embedded)`;
        print(
          io,
          [
            `server      sepp ${info.version}${commit}, up ${age(upMs)} (since ${info.startedAt.toISOString()})`,
            `store       ${storeLine}`,
            `durability  ${info.durability} (the default; a queue may set its own)`,
            `queues      ${queues.length}${info.strictQueues ? ' (strict: only declared queues take jobs)' : ''}`,
            `workers     ${workers.length} connected`,
          ].join('\n'),
        );
      }),
  );
}
