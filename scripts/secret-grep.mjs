// Searches the log lines a test run captured for the secrets it registered
// (tests/helpers/secret-log.ts writes both into SEPP_TEST_LOG_DIR), and for
// two shapes no log may hold whoever registered it: a bearer token that is not
// a placeholder, and a scrypt password hash. Used by run-tests.mjs.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';

/** A bearer token that is not `<redacted>` or another `<placeholder>`. */
const bearerToken = /\bBearer\s+(?!<)[\x21-\x7e]+/i;
/** The PHC prefix of every password hash sepp accepts. */
const scryptHash = /\$scrypt\$ln=/;

function readSecrets(dir) {
  const secrets = new Map();
  const secretsDir = join(dir, 'secrets');
  if (!existsSync(secretsDir)) return secrets;
  for (const name of readdirSync(secretsDir)) {
    for (const line of readFileSync(join(secretsDir, name), 'utf8').split('\n')) {
      if (line === '') continue;
      const { kind, value } = JSON.parse(line);
      if (!secrets.has(value)) secrets.set(value, kind);
    }
  }
  return secrets;
}

/** Where a line holds a secret, the line is shown with each secret replaced by its kind. */
function masked(line, secrets) {
  let out = line;
  for (const [value, kind] of secrets) out = out.split(value).join(`[${kind}]`);
  return out.replace(bearerToken, 'Bearer [token]').replace(/\$scrypt\$[^\s"]*/g, '[scrypt hash]');
}

/**
 * Checks every captured log file. Returns { ok, summary, findings }; `requireEvidence`
 * (a full run) makes a run that captured no line, no server or no secret fail, so
 * the check cannot pass by checking nothing.
 */
export function checkCapturedLogs(dir, { requireEvidence }) {
  const secrets = readSecrets(dir);
  const logsDir = join(dir, 'logs');
  const files = existsSync(logsDir) ? readdirSync(logsDir).sort() : [];
  const sources = new Map();
  const findings = [];
  let lines = 0;
  for (const name of files) {
    const source = basename(name).split('-')[0];
    sources.set(source, (sources.get(source) ?? 0) + 1);
    const text = readFileSync(join(logsDir, name), 'utf8');
    const fileLines = text.split('\n').filter((l) => l !== '');
    lines += fileLines.length;
    const hit =
      bearerToken.test(text) || scryptHash.test(text) || [...secrets.keys()].some((s) => text.includes(s));
    if (!hit) continue;
    fileLines.forEach((line, i) => {
      const kinds = [...secrets].filter(([value]) => line.includes(value)).map(([, kind]) => kind);
      if (bearerToken.test(line)) kinds.push('bearer token');
      if (scryptHash.test(line)) kinds.push('scrypt hash');
      if (kinds.length > 0)
        findings.push(`${join(logsDir, name)}:${i + 1}: ${kinds.join(', ')}: ${masked(line, secrets)}`);
    });
  }
  const servers = (sources.get('server') ?? 0) + (sources.get('process') ?? 0) + (sources.get('admin') ?? 0);
  const detail = [...sources].map(([s, n]) => `${n} ${s}`).join(', ');
  const summary =
    `secret check: ${lines} log lines from ${files.length} captures (${detail || 'none'}) ` +
    `checked against ${secrets.size} secrets: ${findings.length === 0 ? 'none found' : `${findings.length} found`}`;
  const problems = [...findings];
  if (requireEvidence) {
    if (lines === 0) problems.push('no log line was captured: the capture in tests/helpers is broken');
    if (servers === 0) problems.push('no server log was captured: the capture in tests/helpers is broken');
    if (secrets.size === 0)
      problems.push('no secret was registered: the registration in tests/helpers is broken');
  }
  return { ok: problems.length === 0, summary, problems };
}
