/**
 * Fuzzes the config loader with malformed TOML: random mutations and
 * truncations of `sepp config example`, wrong types and out-of-range values
 * for every setting of every section, unknown keys, duplicate tables and
 * keys, and random text in every SEPP_* variable. tests/config/ checks the
 * messages one by one; this checks the promises generically, over every key
 * the schema knows:
 *   - loading never throws (a bug would: a TypeError is no ConfigError);
 *   - every problem names a setting (`limits.max_reserve_jobs`) or, for TOML
 *     syntax, the file's line and column, and carries no stack trace;
 *   - a bad value is reported at its own key, and only a bad value is;
 *   - what loads is frozen and holds the value written.
 * `sepp config check` is run as a process too, on a broken file and on bytes
 * that are not UTF-8. SEPP_FUZZ_RUNS sets the number of cases, shared by the
 * four properties (default 1,600; `npm run test:long` uses 100,000), and
 * SEPP_FUZZ_SECONDS a time box per property (tests/helpers/fuzz-budget.ts).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import fc from 'fast-check';
import type { ConfigProblem } from '../../src/config/config-error.ts';
import { exampleConfig } from '../../src/config/example.ts';
import type { FieldKind } from '../../src/config/fields.ts';
import { ConfigError } from '../../src/config/index.ts';
import { type ConfigResult, loadConfig, parseConfigText } from '../../src/config/load.ts';
import { type AnySectionSpec, rootKeys, sections, snakeCase } from '../../src/config/schema.ts';
import { cwd, fakeFiles } from '../config/helpers.ts';
import { runSepp } from '../helpers/cli.ts';
import { FuzzBudget } from '../helpers/fuzz-budget.ts';

const defaultRuns = 400;
const runs = Math.ceil(Number(process.env.SEPP_FUZZ_RUNS ?? 4 * defaultRuns) / 4);

/** Runs `predicate` as one fast-check property within a FuzzBudget named `name`, and reports it. */
function budgeted<T>(name: string, cases: fc.Arbitrary<T>, predicate: (value: T) => void): void {
  const budget = new FuzzBudget(name, runs, defaultRuns);
  const counted = (value: T) => {
    budget.cases++;
    predicate(value);
  };
  fc.assert(fc.property(cases, counted), { ...budget.fastCheck, includeErrorInReport: true });
  budget.finish();
}
const file = `${cwd}/sepp.toml`;

/** Every setting as written in TOML, with the section header that holds it. */
interface Setting {
  /** `limits.max_reserve_jobs`, `queues.fuzzq.max_attempts`, `grpc.api_keys[0].name`. */
  key: string;
  /** `[limits]`, `[queues.fuzzq]`, `[[grpc.api_keys]]`. */
  header: string;
  name: string;
  kind: FieldKind;
  /** Lines that make the rest of the section valid (an API key needs a name, a role and a key). */
  companions: Record<string, string>;
}

const companionsOf: Record<string, Record<string, string>> = {
  'grpc.api_keys[]': { name: '"fuzz"', role: '"worker"', key_sha256: `"${'ab'.repeat(32)}"` },
  'admin.users[]': {
    name: '"fuzz"',
    role: '"viewer"',
    password_hash:
      '"$scrypt$ln=15,r=8,p=1$P3NVlUQOFwHxCn7kOj/oKg$gJV+Dq+u5sCSPd1UIn5tW+xqeN7CTeMVMu+bsCpy60yAnP1x+qIyU7URf4PIcYgT2f+PhwQx7aw2uYiDaKwgPA"',
  },
  'grpc.tls': { cert_file: '"c.pem"', key_file: '"k.pem"' },
  'admin.tls': { cert_file: '"c.pem"', key_file: '"k.pem"' },
  // The PostgreSQL store's settings are refused beside kind = "sqlite" (the default).
  store: { kind: '"postgres"', url: '"postgres://sepp@127.0.0.1:5432/sepp"' },
};

const settings: Setting[] = sections.flatMap(({ path, spec }) =>
  Object.entries(spec as AnySectionSpec).map(([camel, fieldSpec]) => {
    const name = snakeCase(camel);
    const array = path.endsWith('[]');
    const table = path.replace('[]', '').replace('<name>', 'fuzzq');
    return {
      key: `${array ? `${table}[0]` : table}.${name}`,
      header: array ? `[[${table}]]` : `[${table}]`,
      name,
      kind: fieldSpec.field.kind,
      companions: companionsOf[path] ?? {},
    };
  }),
);
const knownNames = new Set([...settings.map((s) => s.name), ...rootKeys, 'tls', 'api_keys', 'users']);

function load(text: string, env: Record<string, string> = {}): ConfigResult {
  try {
    // Every file exists, secret files too: `config check` does not read push secrets (`sepp serve` does).
    const config = loadConfig({
      env,
      cwd,
      readFile: fakeFiles({ [file]: text }),
      fileExists: () => true,
      readSecretFile: () => Buffer.from('a-push-secret-of-32-characters!!'),
    });
    return { ok: true, config };
  } catch (error) {
    // Anything but a ConfigError escapes the loader as a crash: the property fails with it.
    if (error instanceof ConfigError) return { ok: false, problems: error.problems };
    throw error;
  }
}

/** The promises every problem keeps, whatever the input. */
function checkProblem(problem: ConfigProblem, text: string): void {
  const shown = `${problem.key}: ${problem.message}`;
  assert.ok(problem.key.length > 0 && problem.message.length > 0, `empty key or message: ${shown}`);
  assert.doesNotMatch(
    problem.message,
    /\n\s+at |node:internal|\[object |undefined/,
    `not a user message: ${shown}`,
  );
  if (problem.key.startsWith(`${file}:`)) {
    assert.match(problem.key, /:\d+:\d+$/, `a TOML error points at line and column: ${shown}`);
    assert.match(problem.message, /^invalid TOML: /, shown);
    return;
  }
  if (problem.source !== undefined) return; // From an environment variable, named in `source`.
  // The key is the setting's path: each part is a known name or one the file itself wrote.
  const parts = problem.key.split(/\.|\[\d+\]/).filter((p) => p !== '');
  for (const part of parts) {
    const bare = part.startsWith('"') ? (JSON.parse(part) as string) : part;
    assert.ok(
      knownNames.has(bare) || text.includes(bare),
      `${shown}: "${bare}" is neither a setting nor in the file`,
    );
  }
}

function problemsOf(result: ConfigResult): readonly ConfigProblem[] {
  return result.ok ? [] : result.problems;
}

/** A TOML line for a value; numbers that TOML cannot hold become syntax errors, which is fine. */
function tomlValue(value: unknown): string {
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return 'nan';
    if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
    if (Number.isInteger(value) && Math.abs(value) < 1e21) return value.toFixed(0);
    const text = String(value);
    return /[.e]/.test(text) ? text : `${text}.0`;
  }
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'boolean') return String(value);
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return `[${value.map(tomlValue).join(', ')}]`;
  return `{ ${Object.entries(value as Record<string, unknown>)
    .map(([k, v]) => `${k} = ${tomlValue(v)}`)
    .join(', ')} }`;
}

function sectionText(setting: Setting, value: string): string {
  const lines = [setting.header];
  // An API key takes exactly one of key and key_sha256.
  const skip = new Set([setting.name, setting.name === 'key' ? 'key_sha256' : '']);
  for (const [name, v] of Object.entries(setting.companions))
    if (!skip.has(name)) lines.push(`${name} = ${v}`);
  lines.push(`${setting.name} = ${value}`);
  return `${lines.join('\n')}\n`;
}

/** The types a kind of setting takes in a file (independent of the field code under test). */
const acceptedTypes: Record<FieldKind, readonly string[]> = {
  string: ['string'],
  choice: ['string'],
  path: ['string'],
  url: ['string'],
  listen: ['string'],
  boolean: ['boolean'],
  integer: ['integer'],
  duration: ['integer', 'string'],
  size: ['integer', 'string'],
  ratio: ['integer', 'float'],
  names: ['array'],
  addresses: ['array'],
  table: ['table'],
  time: ['date', 'string'],
};

function typeOf(value: unknown): string {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? 'integer' : 'float';
  if (Array.isArray(value)) return 'array';
  if (value instanceof Date) return 'date';
  if (typeof value === 'object' && value !== null) return 'table';
  return typeof value;
}

const numericKinds = new Set<FieldKind>(['integer', 'duration', 'size', 'ratio']);
const numericSettings = settings.filter((s) => numericKinds.has(s.kind));

const anyValue = fc.oneof(
  fc.constantFrom<unknown>(
    0,
    -1,
    1,
    2 ** 31,
    2 ** 53,
    -(2 ** 53),
    2 ** 62,
    1e300,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    Number.NEGATIVE_INFINITY,
    0.5,
    -0.5,
    1.5,
    '',
    ' ',
    '1',
    '5s',
    '-5s',
    '1.5s',
    '99999999999999d',
    '64MiB',
    '1e3',
    'true',
    'info',
    '127.0.0.1:1',
    '\u0000',
    'x'.repeat(5000),
    true,
    false,
    [],
    ['a', 'a'],
    [1],
    {},
    { a: 1 },
    new Date('1979-05-27T07:32:00Z'),
  ),
  fc.integer({ min: -1_000_000, max: 1_000_000_000 }),
  fc.double({ noNaN: true }),
  fc.string({ maxLength: 20 }),
  fc.array(fc.string({ maxLength: 8 }), { maxLength: 3 }),
);

/** One value of every TOML type, and the edge of each. */
const everyType: unknown[] = [
  0,
  -1,
  1.5,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  '',
  'x',
  true,
  [],
  ['a', 1],
  {},
  { a: { b: 1 } },
  new Date('1979-05-27T07:32:00Z'),
];

/** The promises for one setting set to one value. */
function checkSetting(setting: Setting, value: unknown): void {
  const text = sectionText(setting, tomlValue(value));
  const problems = problemsOf(load(text));
  for (const problem of problems) checkProblem(problem, text);
  if (problems.some((p) => p.key.startsWith(`${file}:`))) return; // TOML could not hold the value.
  if (!acceptedTypes[setting.kind].includes(typeOf(value))) {
    const mine = problems.filter((p) => p.key === setting.key);
    assert.ok(
      mine.length >= 1,
      `${setting.key} = ${tomlValue(value).slice(0, 80)}: ${JSON.stringify(problems)}`,
    );
  }
}

test(`every setting (${settings.length}) × a value of every TOML type: never a crash, a wrong type reported at its key`, () => {
  for (const setting of settings) for (const value of everyType) checkSetting(setting, value);
});

test(`${runs} values of every type for every setting: a bad one is reported at its key`, () => {
  budgeted('config values', fc.tuple(fc.constantFrom(...settings), anyValue), ([setting, value]) =>
    checkSetting(setting, value),
  );
});

test(`${runs} numbers for every numeric setting: negative and huge are refused at the key, naming the bound`, () => {
  const number = fc.oneof(
    fc.integer({ min: -(2 ** 40), max: 2 ** 40 }),
    fc.constantFrom(-1, 0, 1, 2 ** 53, 2 ** 53 + 2, -(2 ** 53), 2 ** 63 - 1, 1e15, 1e300),
    fc.double({ min: -10, max: 200, noNaN: true }),
  );
  budgeted('config numbers', fc.tuple(fc.constantFrom(...numericSettings), number), ([setting, value]) => {
    const text = sectionText(setting, tomlValue(value));
    const result = load(text);
    const problems = problemsOf(result);
    for (const problem of problems) checkProblem(problem, text);
    if (problems.some((p) => p.key.startsWith(`${file}:`))) return;
    const mine = problems.filter((p) => p.key === setting.key);
    const outOfAnyRange = value < 0 || value > Number.MAX_SAFE_INTEGER;
    const fraction = !Number.isInteger(value) && setting.kind !== 'ratio';
    if (outOfAnyRange || fraction) {
      assert.equal(mine.length, 1, `${setting.key} = ${value} loaded: ${JSON.stringify(problems)}`);
      if (outOfAnyRange && Number.isInteger(value)) {
        assert.match(
          mine[0]?.message ?? '',
          /minimum|maximum/,
          `${setting.key} = ${value}: the bound is named`,
        );
      }
    }
    if (result.ok) {
      assert.ok(Object.isFrozen(result.config.engine.limits), 'the config is frozen');
      assert.ok(
        JSON.stringify(result.config).includes(String(value)),
        `${setting.key} = ${value} loaded but the value is not in the config`,
      );
    }
  });
});

/** The example with every `# key = value` and `# [table]` line switched on (as tests/config/example.test.ts does). */
const uncommented = exampleConfig
  .split('\n')
  .map((line) => (/^# (\[\[?[a-z0-9_."]+\]\]?$|[a-z0-9_]+ = )/.test(line) ? line.slice(2) : line))
  .join('\n');

type Mutation = (lines: string[]) => string[];
const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.nat().map((i) => (lines: string[]) => lines.filter((_, j) => j !== i % lines.length)),
  fc.nat().map((i) => (lines: string[]) => lines.flatMap((l, j) => (j === i % lines.length ? [l, l] : [l]))),
  fc.tuple(fc.nat(), fc.nat()).map(([i, k]) => (lines: string[]) => {
    const out = [...lines];
    const a = i % out.length;
    const b = k % out.length;
    [out[a], out[b]] = [out[b] ?? '', out[a] ?? ''];
    return out;
  }),
  fc.tuple(fc.nat(), fc.nat(), fc.string({ maxLength: 6 })).map(([i, at, insert]) => (lines: string[]) => {
    const j = i % lines.length;
    const line = lines[j] ?? '';
    const cut = at % (line.length + 1);
    return lines.map((l, k) => (k === j ? line.slice(0, cut) + insert + line.slice(cut) : l));
  }),
  fc.tuple(fc.nat(), anyValue).map(([i, value]) => (lines: string[]) => {
    const assignments = lines.flatMap((l, j) => (/^[a-z_]+ = /.test(l) ? [j] : []));
    const j = assignments[i % Math.max(1, assignments.length)] ?? 0;
    return lines.map((l, k) => (k === j ? l.replace(/ = .*/, ` = ${tomlValue(value)}`) : l));
  }),
  fc.tuple(fc.nat(), fc.stringMatching(/^[a-z_]{1,12}$/)).map(([i, name]) => (lines: string[]) => {
    const j = i % lines.length;
    return lines.map((l, k) => (k === j ? l.replace(/^[a-z_]+ = /, `${name} = `) : l));
  }),
  fc.nat().map((i) => (lines: string[]) => {
    const headers = lines.filter((l) => /^\[[a-z_.]+\]$/.test(l));
    return [...lines, headers[i % Math.max(1, headers.length)] ?? '[server]'];
  }),
);

test(`${runs} mutated and truncated examples: problems name a key or a line, what loads is the file`, () => {
  budgeted(
    'config mutations',
    fc.tuple(
      fc.constantFrom(exampleConfig, uncommented),
      fc.array(mutation, { minLength: 1, maxLength: 4 }),
      fc.option(fc.nat(), { nil: undefined }),
    ),
    ([base, mutations, truncateAt]) => {
      let text = mutations.reduce((lines, m) => m(lines), base.split('\n')).join('\n');
      if (truncateAt !== undefined) text = text.slice(0, truncateAt % (text.length + 1));
      const result = load(text);
      for (const problem of problemsOf(result)) checkProblem(problem, text);
      const again = parseConfigText(text, { cwd, fileExists: () => true });
      assert.equal(again.ok, result.ok, 'the loader and `config check` agree');
      if (result.ok) assert.ok(Object.isFrozen(result.config), 'a loaded config is frozen');
    },
  );
});

test(`${runs} random texts in SEPP_* variables: problems name the variable`, () => {
  const variables = sections.flatMap(({ spec }) =>
    Object.values(spec as AnySectionSpec).flatMap((s) => (s.env === undefined ? [] : [s.env])),
  );
  budgeted(
    'config variables',
    fc.tuple(
      fc.dictionary(
        fc.constantFrom(...variables),
        fc.oneof(
          fc.string({ maxLength: 30 }),
          anyValue.map((v) => (typeof v === 'string' ? v : tomlValue(v))),
        ),
        {
          minKeys: 1,
          maxKeys: 3,
        },
      ),
    ),
    ([env]) => {
      const result = load('', env);
      for (const problem of problemsOf(result)) {
        checkProblem(problem, '');
        if (problem.source !== undefined) assert.ok(problem.source in env, `${problem.source} was not set`);
      }
    },
  );
});

const configCheck = (path: string) => runSepp(['config', 'check', path]);

test('`sepp config check` on broken files: exit 2 like `sepp serve`, every problem one `sepp:` line, no stack trace', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'sepp-configfuzz-'));
  try {
    const broken = join(dir, 'broken.toml');
    writeFileSync(broken, '[limits]\nmax_reserve_jobs = 0\n[queues.emails]\nmax_attempts = -1\nbogus = 1\n');
    const notText = join(dir, 'binary.toml');
    writeFileSync(notText, Buffer.from([0x5b, 0x73, 0xff, 0xfe, 0x00, 0x0a, 0xc3, 0x28, 0x3d, 0x3d]));
    const [a, b] = await Promise.all([configCheck(broken), configCheck(notText)]);
    assert.equal(a.code, 2, a.stderr);
    const at = `^sepp: ${broken.replaceAll('.', '\\.')}: `;
    assert.match(a.stderr, new RegExp(`${at}limits\\.max_reserve_jobs: 0 is below the minimum 1;`, 'm'));
    assert.match(
      a.stderr,
      new RegExp(`${at}queues\\.emails\\.max_attempts: -1 is below the minimum 1;`, 'm'),
    );
    assert.match(a.stderr, new RegExp(`${at}queues\\.emails\\.bogus: unknown setting`, 'm'));
    assert.equal(b.code, 2, b.stderr);
    assert.match(b.stderr, /^sepp: .*binary\.toml:1:\d+: invalid TOML/);
    for (const out of [a, b]) {
      for (const line of out.stderr.trimEnd().split('\n')) assert.match(line, /^sepp: /);
      assert.doesNotMatch(out.stderr, /\n\s+at |Error:/, 'no stack trace');
      assert.equal(out.stdout, '');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
