/**
 * What each admin UI role may do: the one table the admin server takes every
 * route's role from (`access: roleFor('queue.purge')` in src/admin/routes/),
 * `sepp config example` prints, and docs/admin.md shows
 * (tests/config/admin-roles.test.ts checks the document). Each role can do
 * everything the one before it can, and what its row adds.
 */
import type { AdminRole } from './types.ts';

/** Each role's additions: the sentence people read, and the actions (audit names) it covers. */
export const adminRoleTable = [
  {
    role: 'viewer',
    can:
      'see everything except the audit log, the configuration, which machine answers and where the store is: ' +
      'dashboard (with the SQLite database and WAL sizes, never their paths: the figures `/metrics` serves), ' +
      'queues, jobs and their payloads, dead letters, schedules, workers, search',
    actions: [],
  },
  {
    role: 'operator',
    can:
      'pause and resume queues and schedules; trigger a schedule; enqueue; cancel (one job, the ' +
      'selected ones, all matching, a flow or a batch), run now, reprioritise, requeue (also all matching) and ' +
      'dead-letter jobs; stop a bulk operation; requeue ' +
      'or delete selected dead letters; requeue all dead letters; release a stuck lease; read the ' +
      "audit log; see which server process answered and where its store is (the dashboard's Host, Instance and " +
      "Listens on; for PostgreSQL, the store's host, database, schema, signals and replication)",
    actions: [
      'queue.pause',
      'queue.resume',
      'schedule.pause',
      'schedule.resume',
      'schedule.trigger',
      'job.enqueue',
      'job.cancel',
      'jobs.cancel',
      'flow.cancel',
      'batch.cancel',
      'job.update',
      'jobs.update',
      'job.requeue',
      'jobs.requeue',
      'job.dead_letter',
      'jobs.dead_letter',
      'dead_letters.requeue',
      'dead_letters.delete',
      'dead_letters.requeue_all',
      'worker.release_lease',
      'audit.read',
    ],
  },
  {
    role: 'admin',
    can:
      "purge a queue's ready and scheduled jobs; delete all jobs a filter matches; delete all dead " +
      'letters of a queue; delete an ' +
      "empty queue; change a queue's settings; read the effective configuration",
    actions: [
      'queue.purge',
      'jobs.delete',
      'dead_letters.delete_all',
      'queue.delete',
      'queue.settings.set',
      'config.read',
    ],
  },
] as const satisfies readonly { role: AdminRole; can: string; actions: readonly string[] }[];

/** An action some role of the table allows. */
export type AdminAction = (typeof adminRoleTable)[number]['actions'][number];

/** The least role that may do `action`. */
export function roleFor(action: AdminAction): AdminRole {
  const row = adminRoleTable.find((r) => (r.actions as readonly string[]).includes(action));
  if (row === undefined) throw new Error(`no role allows ${action}`);
  return row.role;
}

/** The table as comment lines of the config example (`# ` and at most 80 columns). */
export function adminRolesComment(): string {
  const text = adminRoleTable.map((r, i) => `"${r.role}" (${i === 0 ? '' : 'also: '}${r.can})`).join('; ');
  const words = `Roles, each with everything the one before it has: ${text}.`.split(' ');
  const lines: string[] = [];
  let line = '#';
  for (const word of words) {
    if (line.length + 1 + word.length > 80) {
      lines.push(line);
      line = '#';
    }
    line += ` ${word}`;
  }
  lines.push(line);
  return lines.join('\n');
}
