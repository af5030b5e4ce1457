/**
 * Every action the server writes to the audit log, by what it acts on: the
 * one list the admin UI's action filter offers (ui/src/pages/audit.tsx
 * imports it, so the filter is built from it, never from a copy).
 * tests/admin/audit-actions.test.ts finds every action written anywhere in
 * src/ (the admin routes, the gRPC handlers, the engine, a reload) and checks
 * that this list holds exactly those.
 *
 * Plain data with no imports: the UI's bundle takes it as it is.
 */
export const auditActions = [
  'session.login',
  'session.login_failed',
  'session.logout',
  'config.reload',
  'queue.pause',
  'queue.resume',
  'queue.purge',
  'queue.delete',
  'queue.settings.set',
  'queue.settings.reset',
  'job.enqueue',
  'job.cancel',
  'job.update',
  'job.requeue',
  'job.dead_letter',
  'jobs.cancel',
  'jobs.update',
  'jobs.requeue',
  'jobs.dead_letter',
  'jobs.delete',
  'flow.cancel',
  'batch.cancel',
  'dead_letters.requeue',
  'dead_letters.delete',
  'dead_letters.requeue_all',
  'dead_letters.delete_all',
  'schedule.create',
  'schedule.update',
  'schedule.delete',
  'schedule.pause',
  'schedule.resume',
  'schedule.trigger',
  'worker.release_lease',
] as const;
