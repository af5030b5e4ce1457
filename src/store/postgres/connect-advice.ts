/**
 * What an operator should do when the PostgreSQL store cannot be opened at start: the
 * driver's and the database's errors ("password authentication failed", "permission
 * denied for database", "timeout expired", ECONNREFUSED…) say what went wrong, not which
 * setting or statement fixes it. `connectAdvice` reads the error's SQLSTATE, or the
 * network error's code, and names the fix (docs/postgres.md, "When the server does not
 * start"). It never repeats a password: it builds its words from the error's kind, the
 * host, the user, the database and the schema only.
 */

import { sqlState } from './connect.ts';
import { PostgresSchemaTooNewError } from './migrate.ts';

/** Where the store was asked to connect (no password). */
export interface ConnectTarget {
  /** `host:port` of the first host, as the URL names it. */
  readonly host: string;
  readonly user: string;
  readonly database: string;
  readonly schema: string;
  readonly statementTimeoutMs: number;
  readonly connectTimeoutMs: number;
}

export interface ConnectAdvice {
  /** What went wrong, in the operator's words (the database's own message when it says it plainly). */
  readonly problem: string;
  /** What to do about it: the settings, or the SQL, that fix it. */
  readonly fix: string;
}

const settings = '(store.url, store.password_file, store.password_env)';

function systemCode(error: unknown): string | undefined {
  if (!(error instanceof Error) || !('code' in error)) return undefined;
  const code = String(error.code);
  return /^E[A-Z_]+$/.test(code) ? code : undefined;
}

/** The advice for `error`, thrown while the store connected or migrated at start. */
export function connectAdvice(error: unknown, target: ConnectTarget): ConnectAdvice {
  const message = error instanceof Error ? error.message : String(error);
  const { host, user, database, schema } = target;
  const state = sqlState(error);
  const code =
    systemCode(error) ?? /\b(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|EHOSTUNREACH|ENETUNREACH)\b/.exec(message)?.[1];
  // The driver's words when the server asks for a password and it was given none.
  if (/client password must be a string|password must be a string/i.test(message)) {
    return {
      problem: `the database asks user "${user}" for a password, and none is configured`,
      fix: 'put it in a file named by store.password_file, or in an environment variable named by store.password_env',
    };
  }
  // A newer sepp migrated the schema: no setting fixes that, only the newer sepp (or a restore).
  if (error instanceof PostgresSchemaTooNewError) {
    return {
      problem: message,
      fix: `a server on schema "${schema}" must run a sepp that knows that schema version or a later one; to go back, restore a dump taken before the upgrade (docs/upgrading.md, "On PostgreSQL")`,
    };
  }
  // Several hosts: the message names each one's reason (which may hold a SQLSTATE's words or
  // a network code), so it is advice on the hosts as a whole.
  if (/no PostgreSQL host (accepts writes|answers)/.test(message)) {
    return {
      problem: message,
      fix: 'each host has its reason in brackets: fix what they say, or the hosts in store.url; with target_session_attrs=read-write one of them must be the primary (docs/postgres.md, "Failover")',
    };
  }
  switch (state) {
    case '28P01':
      return {
        problem: message,
        // PostgreSQL answers an expired password (VALID UNTIL) with the same words, and says so only in its own log.
        fix: `check the password in store.password_file or store.password_env, the user "${user}" in store.url, and that the role's password has not expired (its VALID UNTIL; PostgreSQL's own log says which of the two)`,
      };
    case '28000':
      return {
        problem: message,
        fix: `PostgreSQL's pg_hba.conf does not let user "${user}" connect to database "${database}" from this machine: add a line for it and reload PostgreSQL`,
      };
    case '3D000':
      return {
        problem: message,
        fix: `create it (CREATE DATABASE ${database} OWNER ${user}; docs/postgres.md, "Setting it up"), or name the right database in store.url`,
      };
    case '42501':
      return {
        problem: message,
        fix: /for database/.test(message)
          ? `user "${user}" may not create the schema "${schema}": create it for the user (CREATE SCHEMA ${schema} AUTHORIZATION ${user}), or make it the database's owner (docs/postgres.md, "Setting it up")`
          : `user "${user}" must own the schema "${schema}" and its tables to migrate them: ALTER SCHEMA ${schema} OWNER TO ${user}, or run sepp as the role that created them (docs/postgres.md, "Setting it up")`,
      };
    case '53300': {
      // "too many connections for role …" / "… for database …" is a CONNECTION LIMIT of its own.
      const limited = /for role/.test(message)
        ? `the role's CONNECTION LIMIT is reached (ALTER ROLE ${user} CONNECTION LIMIT …)`
        : /for database/.test(message)
          ? `the database's CONNECTION LIMIT is reached (ALTER DATABASE ${database} CONNECTION LIMIT …)`
          : "PostgreSQL's max_connections is reached";
      return {
        problem: message,
        fix: `${limited}: each sepp server opens store.pool_size + 1 connections (docs/postgres.md, "Sizing")`,
      };
    }
    case '25006':
      return {
        problem: message,
        fix: `the database takes no writes as user "${user}": store.url names a standby, or the database or role has default_transaction_read_only on; name the primary (with several hosts, target_session_attrs=read-write; docs/postgres.md, "Failover")`,
      };
    case '57P03':
      return {
        problem: message,
        fix: 'PostgreSQL is starting up, shutting down or in recovery: start sepp once it accepts connections',
      };
    case '57014':
      return {
        problem: message,
        fix: `a statement at the start ran longer than store.statement_timeout_ms (${target.statementTimeoutMs} ms): another server may hold the migration lock while it migrates; start this one again once that one runs, or raise store.statement_timeout_ms`,
      };
    case undefined:
      break;
    default:
      return { problem: message, fix: settings };
  }
  if (code === 'ECONNREFUSED') {
    return {
      problem: `nothing accepts connections at ${host} (${message})`,
      fix: 'is PostgreSQL running, listening on that address (listen_addresses) and port? (store.url)',
    };
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return { problem: `no such host (${message})`, fix: 'check the host in store.url' };
  }
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') {
    return {
      problem: `${host} is unreachable from here (${message})`,
      fix: 'check the host in store.url and the network',
    };
  }
  if (/timeout expired|Connection terminated due to connection timeout/i.test(message)) {
    return {
      problem: `${host} did not answer within ${target.connectTimeoutMs / 1000} s`,
      fix: 'check the host and port in store.url, and that no firewall drops the connection',
    };
  }
  if (/Connection terminated unexpectedly/i.test(message)) {
    return {
      problem: `${host} closed the connection before PostgreSQL answered`,
      fix: "is that PostgreSQL's address and port, not a proxy's or another server's? (store.url; PostgreSQL's log may say why)",
    };
  }
  if (/does not support SSL/i.test(message)) {
    return { problem: message, fix: 'drop sslmode from store.url, or turn on ssl in PostgreSQL' };
  }
  return { problem: message, fix: settings };
}
