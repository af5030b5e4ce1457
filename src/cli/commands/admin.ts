/**
 * `sepp admin hash-password` and `sepp admin new-api-key`: the credentials the
 * config file holds, made without a running server. What they print is what
 * the config loader accepts (the same parser checks it before printing), and
 * the secrets themselves are never stored: the config gets the scrypt hash and
 * the key's SHA-256.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Argv } from 'yargs';
import { apiKeyRoles, credentialName, hashPassword, parseConfigText } from '../../config/index.ts';
import { oneLine, UsageError } from '../failure.ts';
import type { CliIo } from '../io.ts';
import { print, printJson } from './connection.ts';
import { HiddenPrompt, readLine } from './secret-input.ts';

/** Shortest password accepted: shorter ones fall to guessing however slow the hash is. */
export const passwordMinChars = 8;

function checkPassword(password: string): string {
  if (password === '') throw new UsageError('no password given');
  if ([...password].length < passwordMinChars) {
    throw new UsageError(`the password is shorter than ${passwordMinChars} characters; choose a longer one`);
  }
  return password;
}

async function readPassword(io: CliIo): Promise<string> {
  if (!io.stdin.isTTY) {
    return checkPassword(await readLine(io.stdin));
  }
  const prompt = new HiddenPrompt(io.stdin, io.stderr);
  const first = checkPassword(await prompt.ask('Password: '));
  const again = await prompt.ask('Repeat it: ');
  if (again !== first) throw new UsageError('the passwords do not match; nothing printed');
  return first;
}

/** The TOML a new key goes into the config with: only the key's SHA-256, never the key. */
function apiKeyToml(name: string, role: string, keySha256: string): string {
  return `[[grpc.api_keys]]\nname = "${name}"\nrole = "${role}"\nkey_sha256 = "${keySha256}"\n`;
}

export function registerAdminCommands(parser: Argv, io: CliIo): void {
  parser.command('admin', 'Make credentials for the config file: admin UI password hashes, API keys', (y) =>
    y
      .command(
        'hash-password',
        'Hash a password for an [[admin.users]] entry (asks twice on a terminal; else reads one line from stdin)',
        (c) =>
          c
            .example('$0 admin hash-password', 'asks for the password, prints its hash')
            .example('printf \'%s\\n\' "$PW" | $0 admin hash-password', 'from a script'),
        async () => {
          const hash = await hashPassword(await readPassword(io));
          print(io, hash);
          if (io.stdin.isTTY) {
            io.stderr.write('Put it in sepp.toml as password_hash of an [[admin.users]] entry.\n');
          }
        },
      )
      .command(
        'new-api-key',
        'Make a random API key: prints it once, and the [[grpc.api_keys]] lines with its SHA-256',
        (c) =>
          c
            .option('name', {
              type: 'string',
              demandOption: true,
              describe: 'Name of the key (shown in logs and audit entries), e.g. billing-producer',
            })
            .option('role', {
              choices: apiKeyRoles,
              demandOption: true,
              describe: 'What the key may do: producer (enqueue), worker (reserve, ack…), admin (everything)',
            })
            .option('json', { type: 'boolean', describe: 'As JSON: name, role, key, keySha256, toml' })
            .example('$0 admin new-api-key --name billing --role producer', 'a key for a producer'),
        (args) => {
          if (!credentialName.re.test(args.name)) {
            throw new UsageError(`--name ${JSON.stringify(args.name)}: ${credentialName.help}`);
          }
          const key = `sepp_${randomBytes(32).toString('base64url')}`;
          const keySha256 = createHash('sha256').update(key, 'utf8').digest('hex');
          const toml = apiKeyToml(args.name, args.role, keySha256);
          // What is printed must load: a loader change that refused it would fail here, not at the user's restart.
          const check = parseConfigText(toml);
          if (!check.ok) throw new Error(oneLine(check.problems.map((p) => p.message).join('\n')));
          if (args.json === true) {
            printJson(io, { name: args.name, role: args.role, key, keySha256, toml });
            return;
          }
          print(
            io,
            `API key "${args.name}" (role ${args.role}), shown only this once; give it to the client now ` +
              '(e.g. as SEPP_API_KEY):\n\n' +
              `    ${key}\n\n` +
              "Add these lines to sepp.toml (they hold only the key's SHA-256), then reload sepp " +
              '(`sepp config reload`, or SIGHUP) or restart it:\n\n' +
              toml,
          );
        },
      )
      .demandCommand(1, 'name an admin subcommand: hash-password or new-api-key'),
  );
}
