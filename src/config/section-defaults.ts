/**
 * Sections whose every setting has a default: read what the file gives and
 * fill in the rest, so the built config has no optional scalar.
 */
import type { ConfigReader } from './reader.ts';
import type { SectionSpec } from './schema.ts';

/** Fills in the defaults of a section whose every setting has one. */
export function complete<T>(reader: ConfigReader, spec: SectionSpec<T>, given: Partial<T>): T {
  const merged: Partial<T> = { ...reader.defaults(spec), ...given };
  for (const key of Object.keys(spec)) {
    if (!(key in merged)) throw new Error(`bug: setting ${key} has no default`);
  }
  return merged as T;
}

/** Reads a section and fills in its defaults; `nested` names its sub-tables, read elsewhere. */
export function withDefaults<T>(
  reader: ConfigReader,
  path: string,
  spec: SectionSpec<T>,
  value: unknown,
  nested?: string[],
): T {
  return complete(reader, spec, reader.section(path, spec, value, { nested: nested ?? [] }));
}
