/** Shared helpers for the config tests: an in-memory file system and problem lookups. */
import assert from 'node:assert/strict';
import { ConfigError, type ConfigProblem } from '../../src/config/config-error.ts';
import { type LoadConfigOptions, loadConfig, parseConfigText } from '../../src/config/load.ts';
import type { SeppConfig } from '../../src/config/types.ts';

export const cwd = '/srv/sepp';

/** A readFile over fixed contents that fails like fs does for a missing file. */
export function fakeFiles(files: Readonly<Record<string, string>>): (path: string) => string {
  return (path) => {
    const text = files[path];
    if (text === undefined) {
      throw Object.assign(new Error(`ENOENT: no such file or directory, open '${path}'`), { code: 'ENOENT' });
    }
    return text;
  };
}

/** Loads with nothing from the real machine: no env, no files unless given. */
export function load(options: LoadConfigOptions & { files?: Record<string, string> } = {}): SeppConfig {
  const { files, ...rest } = options;
  return loadConfig({ env: {}, cwd, readFile: fakeFiles(files ?? {}), fileExists: () => true, ...rest });
}

/** Loads `toml` as ./sepp.toml and returns the config. */
export function loadToml(toml: string, options: LoadConfigOptions = {}): SeppConfig {
  return load({ files: { [`${cwd}/sepp.toml`]: toml }, ...options });
}

/** The problems of `toml` (as ./sepp.toml); fails the test if it is valid. */
export function problemsOf(toml: string, options: LoadConfigOptions = {}): readonly ConfigProblem[] {
  try {
    loadToml(toml, options);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  assert.fail(`expected problems in:\n${toml}`);
}

/** Asserts that exactly one problem names `key` and that its message matches every pattern. */
export function assertProblem(
  problems: readonly ConfigProblem[],
  key: string,
  ...patterns: RegExp[]
): ConfigProblem {
  const found = problems.filter((p) => p.key === key);
  assert.equal(
    found.length,
    1,
    `one problem for ${key}, got:\n${problems.map((p) => `${p.key}: ${p.message}`).join('\n')}`,
  );
  const problem = found[0]!;
  for (const pattern of patterns) assert.match(problem.message, pattern);
  return problem;
}

/** Checks that `toml` is valid and parses without touching any file. */
export function validText(toml: string): SeppConfig {
  const result = parseConfigText(toml, { cwd });
  if (!result.ok) assert.fail(result.problems.map((p) => `${p.key}: ${p.message}`).join('\n'));
  return result.config;
}
