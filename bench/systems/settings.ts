import type { DriverSettings } from './types.ts';

/**
 * Reads `--set <key>=<value>` for a driver, where `key` is `<system>.<name>`, checking the
 * value against the allowed ones so a typo fails at startup instead of silently
 * benchmarking the default.
 */
export function choice<T extends string>(
  settings: DriverSettings,
  key: string,
  allowed: readonly T[],
  fallback: T,
): T {
  const value = settings.get(key);
  if (value === undefined) return fallback;
  const found = allowed.find((a) => a === value);
  if (found === undefined) {
    throw new Error(`--set ${key}=${value}: the value must be one of ${allowed.join(', ')}`);
  }
  return found;
}
