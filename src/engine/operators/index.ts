/**
 * What operators look at and do beyond the protocol's job calls: job lists
 * across queues and states, search, the workers connected now and the release
 * of a stuck lease, and the online backup.
 */
export { JobBrowser } from './job-browse.ts';
export { JobSearch } from './job-search.ts';
export { OnlineBackup } from './online-backup.ts';
export { WorkerActivity } from './worker-activity.ts';
export { WorkerControl } from './worker-control.ts';
export { type WorkerHandle, WorkerRegistry } from './worker-registry.ts';
