/**
 * The configuration layer's public API: the layers above import from here.
 * See docs/configuration.md for every setting.
 */
export { boundMessage, listedItemsMax, messageBytesMax, summarizeList } from './bounded-message.ts';
export { ConfigError, type ConfigProblem, formatProblem, formatProblems } from './config-error.ts';
export { type ConfigEntry, describeConfig } from './config-view.ts';
export { exampleConfig } from './example.ts';
export { type FileMode, filePermissionWarnings, type StatMode, statMode } from './file-permissions.ts';
export { boundAddress, isLoopbackHost, type ListenAddress, parseListenAddress } from './listen-address.ts';
export {
  type ConfigIo,
  type ConfigResult,
  checkConfigFile,
  defaultConfigFileName,
  type LoadConfigOptions,
  loadConfig,
  parseConfigText,
} from './load.ts';
export {
  defaultScryptParams,
  formatPasswordHash,
  hashPassword,
  type PasswordHash,
  parsePasswordHash,
  type ScryptParams,
  verifyPassword,
} from './password-hash.ts';
export { queueSettingMeaning, type SettingMeaning } from './queue-setting-meaning.ts';
export {
  overrideConflicts,
  parseQueueSettingKeys,
  parseQueueSettingValues,
  queueSettingNames,
  queueSettingsChecker,
  queueSettingText,
} from './queue-settings-input.ts';
export { tomlKey } from './reader.ts';
export { type JsonValue, redactConfig, redacted } from './redact.ts';
export { planReload, type ReloadPlan } from './reload-plan.ts';
export { checkReloadSafety, type ReloadSafety } from './reload-safety.ts';
export { configKeys, credentialName, engineLimitRanges, environmentVariables } from './schema.ts';
export { closestKey } from './suggest.ts';
export { type TlsFileProblem, tlsFilesProblems, tlsPairProblems } from './tls-files.ts';
export type * from './types.ts';
export { adminRoles, apiKeyRoles, durabilities, logFormats, logLevels } from './types.ts';
export { formatDurationMs, formatSizeBytes, parseDurationMs, parseSizeBytes } from './units.ts';
export { type ConfigWarning, configWarnings } from './warnings.ts';
