/**
 * The configuration layer's public API: the layers above import from here.
 * See docs/configuration.md for every setting.
 */

// The engine's rule for a request key, for the CLI to check --request-key before any call
// (the CLI imports no module of the engine; config is its door to the server's rules).
export { isRequestKey, requestKeyMaxChars } from '../engine/control/bulk-keys.ts';
export { roleFor } from './admin-roles.ts';
export { boundMessage, messageBytesMax, summarizeList } from './bounded-message.ts';
export { ConfigError, type ConfigProblem, formatProblem, formatProblems } from './config-error.ts';
export { type ConfigEntry, describeConfig } from './config-view.ts';
export { runningMessageSizeProblems } from './cross-section-checks.ts';
export { exampleConfig } from './example.ts';
export { filePermissionWarnings } from './file-permissions.ts';
export { boundAddress, type ListenAddress, parseListenAddress } from './listen-address.ts';
export {
  checkConfigFile,
  loadConfig,
  parseConfigText,
} from './load.ts';
export { hashPassword } from './password-hash.ts';
export {
  ackBatchInScope,
  hideNotFound,
  leaseScope,
  notVisible,
  QueueScope,
  queueOfJob,
  refuseDependencies,
  requireInScope,
  requireJobsInScope,
  type ScopedQueue,
  scopeJobLinks,
  serverWide,
} from './queue-scope.ts';
export { queueSettingMeaning } from './queue-setting-meaning.ts';
export {
  overrideConflicts,
  parseQueueSettingKeys,
  parseQueueSettingValues,
  queueSettingsChecker,
  queueSettingText,
} from './queue-settings-input.ts';
export { tomlKey } from './reader.ts';
export { describePostgresUrl, redactConfig, redactUrl } from './redact.ts';
export { planReload, type SettingChange } from './reload-plan.ts';
export { checkReloadSafety } from './reload-safety.ts';
export { credentialName } from './schema.ts';
export { sqliteLeftBehindWarnings } from './sqlite-left-behind.ts';
export { closestKey } from './suggest.ts';
export { tlsFilesProblems } from './tls-files.ts';
export type * from './types.ts';
export { apiKeyRoles } from './types.ts';
export { formatDurationMs, parseDurationMs } from './units.ts';
export { configWarnings } from './warnings.ts';
