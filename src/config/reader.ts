/**
 * Reads sections of a parsed TOML document against their specs, applying the
 * environment and flag overrides, and collects every problem (bad values and
 * unknown keys) instead of stopping at the first.
 */
import type { ConfigProblem } from './config-error.ts';
import { describeRaw } from './fields.ts';
import { type AnySectionSpec, type SectionSpec, sections, snakeCase } from './schema.ts';
import { closestKey } from './suggest.ts';

/** A value given as text by an environment variable or a flag. */
export interface Override {
  readonly text: string;
  /** `SEPP_DATA_DIR` or `--data-dir`, for messages. */
  readonly source: string;
}

export type Table = Readonly<Record<string, unknown>>;

/** A TOML table (smol-toml makes them without a prototype), not a list, date or scalar. */
export function asTable(value: unknown): Table | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== null && proto !== Object.prototype) return undefined;
  return value as Table;
}

/** How a key is written in TOML: bare when it can be, quoted otherwise. */
export function tomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : JSON.stringify(key);
}

/** How a schema section path is written as a TOML header, for hints. */
function header(schemaPath: string): string {
  if (schemaPath.endsWith('[]')) return `[[${schemaPath.slice(0, -2)}]]`;
  return `[${schemaPath.replace('<name>', 'NAME')}]`;
}

export interface SectionOptions {
  /** Keys of this table that are sub-tables read separately (`tls`, `api_keys`). */
  readonly nested?: readonly string[];
  /** The schema path when it differs from the path (`queues.<name>` for `queues.emails`). */
  readonly schemaPath?: string;
}

export class ConfigReader {
  readonly problems: ConfigProblem[] = [];
  /** Full keys whose value was present but invalid: cross-setting checks skip them. */
  readonly failed = new Set<string>();
  /**
   * Where each value that is not a default came from, by full key: `file`, or
   * the environment variable or flag that set it (`SEPP_DATA_DIR`, `--data-dir`).
   */
  readonly sources = new Map<string, string>();

  constructor(
    private readonly overrides: ReadonlyMap<string, Override>,
    /** Relative paths in the file resolve against the file's directory... */
    private readonly fileDir: string,
    /** ...and those from flags, variables and defaults against the working directory. */
    private readonly cwd: string,
  ) {}

  /** Whether an environment variable or a flag sets this key (so its value is not from the file). */
  overridden(fullKey: string): boolean {
    return this.overrides.has(fullKey);
  }

  problem(key: string, message: string, source?: string): void {
    this.problems.push(source === undefined ? { key, message } : { key, source, message });
  }

  /**
   * The settings of one section that are present in the file or overridden,
   * and valid. Missing ones are absent from the result: the caller decides
   * what they default to.
   */
  section<T>(path: string, spec: SectionSpec<T>, value: unknown, options: SectionOptions = {}): Partial<T> {
    const table = asTable(value);
    if (value !== undefined && table === undefined) {
      this.problem(path, `is ${describeRaw(value)}, but must be a table: write its settings under [${path}]`);
    }
    const result: Partial<T> = {};
    const known = new Set<string>();
    for (const [camel, fieldSpec] of Object.entries(spec as AnySectionSpec)) {
      const key = snakeCase(camel);
      known.add(key);
      const fullKey = `${path}.${key}`;
      const override = this.overrides.get(fullKey);
      const raw = override === undefined ? table?.[key] : override.text;
      if (raw === undefined) continue;
      const at = {
        fromText: override !== undefined,
        baseDir: override === undefined ? this.fileDir : this.cwd,
      };
      const parsed = fieldSpec.field.parse(raw, at);
      if (parsed.ok) {
        (result as Record<string, unknown>)[camel] = parsed.value;
        this.sources.set(fullKey, override?.source ?? 'file');
      } else {
        this.failed.add(fullKey);
        this.problem(fullKey, parsed.message, override?.source);
      }
    }
    const nested = options.nested ?? [];
    for (const key of Object.keys(table ?? {})) {
      if (known.has(key) || nested.includes(key)) continue;
      this.unknownKey(path, options.schemaPath ?? path, key, [...known, ...nested]);
    }
    return result;
  }

  /** The spec's defaults, parsed; a default that does not parse is a bug in the schema. */
  defaults<T>(spec: SectionSpec<T>): Partial<T> {
    const result: Partial<T> = {};
    for (const [camel, fieldSpec] of Object.entries(spec as AnySectionSpec)) {
      if (fieldSpec.default === undefined) continue;
      let value: unknown = null;
      if (fieldSpec.default !== null) {
        const parsed = fieldSpec.field.parse(fieldSpec.default, { fromText: false, baseDir: this.cwd });
        if (!parsed.ok) throw new Error(`bug: default of ${camel} is invalid: ${parsed.message}`);
        value = parsed.value;
      }
      (result as Record<string, unknown>)[camel] = value;
    }
    return result;
  }

  /** Reports a key no section knows, with the likeliest fix. */
  unknownKey(path: string, schemaPath: string, key: string, known: readonly string[]): void {
    const fullKey = path === '' ? tomlKey(key) : `${path}.${tomlKey(key)}`;
    if (schemaPath === 'admin.users[]' && /^pass(word)?$/i.test(key)) {
      this.problem(
        fullKey,
        'passwords are never stored in the config: run `sepp admin hash-password` and put its output in password_hash',
      );
      return;
    }
    const near = closestKey(key, known);
    if (near !== undefined) {
      this.problem(fullKey, `unknown setting; did you mean ${near}?`);
      return;
    }
    const homes = sections
      .filter((s) => s.path !== schemaPath && Object.keys(s.spec).some((k) => snakeCase(k) === key))
      .map((s) => header(s.path));
    if (homes.length > 0) {
      const where = path === '' ? 'at the top of the file' : `in [${path}]`;
      this.problem(fullKey, `${key} does not belong ${where}; it is a setting of ${homes.join(' and ')}`);
      return;
    }
    const list = known.length > 0 ? `; the settings here are ${known.join(', ')}` : '';
    this.problem(fullKey, `unknown setting${list}`);
  }
}
