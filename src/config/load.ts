/**
 * Loading: find the file, parse it, lay the environment and the flags over
 * it, validate everything, freeze the result. Precedence, highest first:
 * flags > SEPP_* environment variables > config file > defaults.
 *
 * The file is `--config PATH`, else `$SEPP_CONFIG`, else `./sepp.toml` when
 * it exists, else none. Everything outside (environment, working directory,
 * file system) is injected, so tests need no real files.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { parse, TomlError } from 'smol-toml';
import { type BuildIo, buildConfig } from './build.ts';
import { ConfigError, type ConfigProblem } from './config-error.ts';
import { ConfigReader, type Override } from './reader.ts';
import { type AnySectionSpec, flagName, sections, snakeCase } from './schema.ts';
import type { ConfigFlags, SeppConfig } from './types.ts';

/** The file looked for in the working directory when no other is named. */
export const defaultConfigFileName = 'sepp.toml';

export interface ConfigIo {
  /** Where `./sepp.toml` is looked for and what relative paths from flags, variables and defaults are relative to. */
  readonly cwd?: string;
  /** Reads a UTF-8 file; throws an error with `code: 'ENOENT'` when there is none. */
  readonly readFile?: (path: string) => string;
  /** Whether a file exists; used to check the TLS files. */
  readonly fileExists?: (path: string) => boolean;
  /**
   * Reads a TLS file, to check that it holds a usable certificate or key.
   * Default: the real file system, unless `fileExists` is given (a caller
   * with a file system of its own), in which case the contents are not checked.
   */
  readonly readPem?: (path: string) => string;
  /** Reads a push signing secret (`secret_file`). Default: the real file system. */
  readonly readSecretFile?: (path: string) => Buffer;
}

export interface LoadConfigOptions extends ConfigIo {
  readonly flags?: ConfigFlags;
  /**
   * False: push signing secrets are neither read nor checked, for a caller that wants the
   * addresses alone (the CLI looking for the admin address of a server that refused it). Default true.
   */
  readonly readSecrets?: boolean;
  /** Default: process.env. An empty variable counts as unset. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

export type ConfigResult =
  | { readonly ok: true; readonly config: SeppConfig }
  | { readonly ok: false; readonly problems: readonly ConfigProblem[] };

const defaultIo = {
  readFile: (path: string) => readFileSync(path, 'utf8'),
  fileExists: (path: string) => existsSync(path),
  readPem: (path: string) => readFileSync(path, 'utf8'),
};

/** The file-system functions for the config build: the real ones unless the caller brought its own. */
function buildIo(io: ConfigIo): {
  fileExists: (path: string) => boolean;
  readPem?: (path: string) => string;
} {
  if (io.fileExists === undefined)
    return { fileExists: defaultIo.fileExists, readPem: io.readPem ?? defaultIo.readPem };
  return io.readPem === undefined
    ? { fileExists: io.fileExists }
    : { fileExists: io.fileExists, readPem: io.readPem };
}

function isMissingFile(error: unknown): boolean {
  return error instanceof Error && 'code' in error && error.code === 'ENOENT';
}

function deepFreeze<T>(value: T): T {
  // Bytes (a schedule's payload) cannot be frozen; nothing hands them out to change.
  if (ArrayBuffer.isView(value)) return value;
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}

/** The overrides the environment and the flags make, by full TOML key; flags win. */
function collectOverrides(
  env: Readonly<Record<string, string | undefined>>,
  flags: ConfigFlags,
): Map<string, Override> {
  const overrides = new Map<string, Override>();
  for (const layer of ['env', 'flag'] as const) {
    for (const { path, spec } of sections) {
      for (const [camel, fieldSpec] of Object.entries(spec as AnySectionSpec)) {
        const key = `${path}.${snakeCase(camel)}`;
        if (layer === 'env' && fieldSpec.env !== undefined) {
          const text = env[fieldSpec.env];
          if (text !== undefined && text !== '') overrides.set(key, { text, source: fieldSpec.env });
        }
        if (layer === 'flag' && fieldSpec.flag !== undefined) {
          const text = flags[fieldSpec.flag];
          if (text !== undefined) overrides.set(key, { text, source: flagName(fieldSpec.flag) });
        }
      }
    }
  }
  return overrides;
}

interface Source {
  /** Absolute path of the file, or null for none. */
  readonly file: string | null;
  /** Its text (empty when there is no file). */
  readonly text: string;
}

/**
 * TOML keys whose values are secrets (or hashes of them, or URLs that may carry
 * credentials, or names of variables that hold one, where a secret pasted by mistake goes),
 * written bare or quoted (`"key" = …`), followed by the value as far as
 * the text holds it: a multi-line string up to its closing quotes, a string cut short
 * to the end of its line.
 */
const secretAssignmentRe =
  /\b(key|key_sha256|password|password_hash|password_env|secret|secret_env|token|metrics_token|metrics_token_sha256|otlp_endpoint|url)(["']?\s*=\s*)(?:"""[\s\S]*?(?:"""|$)|'''[\s\S]*?(?:'''|$)|"(?:[^"\\\n]|\\.)*"?|'[^'\n]*'?|[^\s,}]+)/g;

/**
 * `text` with the value of every secret assignment replaced. A multi-line value keeps its
 * line breaks (each of its lines shown as `<redacted>`), so every line keeps its number.
 */
export function redactSecretAssignments(text: string): string {
  return text.replace(
    secretAssignmentRe,
    (match: string, name: string, equals: string) =>
      `${name}${equals}<redacted>${(match.match(/\r?\n/g) ?? []).map((lineBreak) => `${lineBreak}<redacted>`).join('')}`,
  );
}

/**
 * The lines around a syntax error (line and column from 1), numbered, with a caret under the
 * column: taken from the file with its secrets redacted first, so that neither a cut-short
 * value nor a line inside a multi-line secret (its `key = """` out of the excerpt) is shown.
 */
function syntaxErrorExcerpt(text: string, line: number, column: number): string {
  const lines = redactSecretAssignments(text).split(/\r?\n/);
  const numberWidth = String(line + 1).length;
  const shown: string[] = [];
  for (let at = line - 1; at <= line + 1; at++) {
    const shownLine = lines[at - 1];
    if (shownLine === undefined || shownLine === '') continue;
    shown.push(`${String(at).padEnd(numberWidth)}:  ${shownLine}`);
    if (at === line) shown.push(`${' '.repeat(numberWidth + column + 2)}^`);
  }
  return shown.join('\n');
}

/** Parses TOML, turning a syntax error into a problem that points at the line and column. */
function parseToml(
  text: string,
  label: string,
): { ok: true; document: unknown } | { ok: false; problem: ConfigProblem } {
  try {
    return { ok: true, document: parse(text) };
  } catch (error) {
    if (error instanceof TomlError) {
      const reason = (error.message.split('\n')[0] ?? '').replace(/^Invalid TOML document: /, '');
      const excerpt = syntaxErrorExcerpt(text, error.line, error.column);
      return {
        ok: false,
        problem: {
          key: `${label}:${error.line}:${error.column}`,
          message: `invalid TOML: ${reason}\n${excerpt}`,
        },
      };
    }
    throw error;
  }
}

function evaluate(
  source: Source,
  overrides: ReadonlyMap<string, Override>,
  io: BuildIo & { cwd: string },
): ConfigResult {
  let document: unknown = {};
  if (source.file !== null) {
    const parsed = parseToml(source.text, source.file);
    if (!parsed.ok) return { ok: false, problems: [parsed.problem] };
    document = parsed.document;
  }
  const fileDir = source.file === null ? io.cwd : dirname(source.file);
  const reader = new ConfigReader(overrides, fileDir, io.cwd);
  const config = buildConfig(reader, document, source.file, io);
  if (reader.problems.length > 0) return { ok: false, problems: reader.problems };
  return { ok: true, config: deepFreeze(config) };
}

/**
 * Reads the config file, or says why it cannot. `chosen` is a file someone
 * named (and `key` where they named it); without one, ./sepp.toml is optional.
 */
function locate(
  chosen: { path: string; key: string } | undefined,
  cwd: string,
  readFile: (path: string) => string,
): { ok: true; source: Source } | { ok: false; problem: ConfigProblem } {
  const file = resolve(cwd, chosen?.path ?? defaultConfigFileName);
  try {
    return { ok: true, source: { file, text: readFile(file) } };
  } catch (error) {
    if (chosen === undefined && isMissingFile(error)) return { ok: true, source: { file: null, text: '' } };
    const key = chosen?.key ?? file;
    const message = isMissingFile(error)
      ? `${file} does not exist; give the path of a config file (\`sepp config example\` prints one)`
      : `cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`;
    return { ok: false, problem: { key, message } };
  }
}

/**
 * Loads the configuration for `sepp serve`. Returns it frozen, or throws a
 * ConfigError listing every problem found.
 */
export function loadConfig(options: LoadConfigOptions = {}): SeppConfig {
  const cwd = options.cwd ?? process.cwd();
  const env = options.env ?? process.env;
  const flags = options.flags ?? {};
  const readFile = options.readFile ?? defaultIo.readFile;
  const named = flags.config !== undefined ? { path: flags.config, key: '--config' } : undefined;
  const fromEnv = env.SEPP_CONFIG ? { path: env.SEPP_CONFIG, key: 'SEPP_CONFIG' } : undefined;
  const located = locate(named ?? fromEnv, cwd, readFile);
  if (!located.ok) throw new ConfigError([located.problem], null);
  const secrets = { readFile: options.readSecretFile ?? ((path: string) => readFileSync(path)), env };
  const result = evaluate(located.source, collectOverrides(env, flags), {
    cwd,
    ...buildIo(options),
    ...(options.readSecrets === false ? {} : { secrets }),
  });
  if (!result.ok) throw new ConfigError(result.problems, located.source.file);
  return result.config;
}

/**
 * For `sepp config check FILE`: validates one file on its own (defaults fill
 * what it leaves out; environment variables and flags play no part, and push
 * signing secrets are not read: `sepp serve` reads and checks them).
 */
export function checkConfigFile(path: string, io: ConfigIo = {}): ConfigResult {
  const cwd = io.cwd ?? process.cwd();
  const readFile = io.readFile ?? defaultIo.readFile;
  const located = locate({ path, key: path }, cwd, readFile);
  if (!located.ok) return { ok: false, problems: [located.problem] };
  return evaluate(located.source, new Map(), { cwd, ...buildIo(io) });
}

/**
 * Validates config text that is not (yet) a file, e.g. the example. `file`
 * names it in messages and anchors its relative paths; it is not read.
 */
export function parseConfigText(text: string, options: ConfigIo & { file?: string } = {}): ConfigResult {
  const cwd = options.cwd ?? process.cwd();
  const file = resolve(cwd, options.file ?? defaultConfigFileName);
  return evaluate({ file, text }, new Map(), {
    cwd,
    fileExists: options.fileExists,
    readPem: options.readPem,
  });
}
