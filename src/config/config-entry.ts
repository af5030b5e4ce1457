/**
 * One setting of the effective configuration as people see it (the admin
 * UI's Configuration page, `sepp config show`). Types only and no Node.js
 * imports, so the admin API's shapes (src/admin/api-types.ts), which the UI
 * type-checks against, can use it.
 */

/** One setting for people. */
export interface ConfigEntry {
  /** The TOML key, e.g. `server.grpc_listen`, `grpc.api_keys[0].role`, `queues.emails.max_attempts`. */
  readonly key: string;
  /** The value in plain units (`30s`, `1MiB`), `<redacted>` for secrets, `not set` for none. */
  readonly value: string;
  /**
   * Where it comes from: `default`, `file`, the environment variable or flag
   * that set it; for a declared queue's setting the file did not write,
   * `queue_defaults` when [queue_defaults] did.
   */
  readonly source: string;
  /** True when a new value takes a restart (a reload leaves it as it runs). */
  readonly restartRequired: boolean;
  /** For a setting of [queues.NAME]: the queue and the setting's name (`max_attempts`). */
  readonly queue?: { readonly name: string; readonly setting: string };
}
