/** Queues as operators manage them: listing, pause and resume, delete, and settings changed at run time. */
export { checkQueueExists, checkQueueName, QueueAdmin } from './queue-admin.ts';
export { QueueLookup } from './queue-lookup.ts';
export { QueueRefresh } from './queue-refresh.ts';
export {
  type QueueSettingsChange,
  type QueueSettingsCheck,
  RuntimeSettings,
  settingKeyOf,
} from './runtime-settings.ts';
