/** `sepp queues`: every queue with its counts by state. */
import type { Argv } from 'yargs';
import { print, printJson, runWithClient, wantsJson, withConnection } from './connection.ts';
import { age, table } from './format.ts';

export function registerQueuesCommand(parser: Argv): void {
  parser.command(
    'queues',
    'List queues with their jobs by state, paused flag and oldest ready job',
    (y) => withConnection(y),
    (args) =>
      runWithClient(args, async (client) => {
        const queues = await client.listQueues();
        if (wantsJson(args)) {
          printJson(queues);
          return;
        }
        if (queues.length === 0) {
          print('no queues yet (a queue appears with its first job)');
          return;
        }
        print(
          table(
            [
              'QUEUE',
              'PAUSED',
              'SCHEDULED',
              'READY',
              'LEASED',
              'DEAD',
              'COMPLETED',
              'OLDEST READY',
              'WAITING',
            ],
            queues.map((q) => [
              q.name,
              q.paused ? 'yes' : 'no',
              String(q.counts.scheduled),
              String(q.counts.ready),
              String(q.counts.leased),
              String(q.counts.dead),
              String(q.counts.completed),
              q.oldestReadyAgeMs === null ? '-' : age(q.oldestReadyAgeMs),
              String(q.waitingWorkers),
            ]),
          ),
        );
      }),
  );
}
