/**
 * What a reload may not do on its own: lower security. A new file has been
 * loaded and validated as at start; this compares it with the running
 * configuration and refuses, with a problem naming the setting:
 *
 * - a file that is not a complete configuration: the file the server started
 *   with is gone, or it holds no setting at all (empty, comments only) while
 *   the running one had some. A reload never falls back to the defaults.
 *   (A file cut at a line boundary parses; it cannot be told from a shorter
 *   file, but what it drops is caught below.)
 * - the start-up rule (SPEC §6, cross-section-checks.ts) for the addresses
 *   the server *listens on*: a new address takes a restart, so a file that
 *   names loopback (or names none, which defaults to loopback) does not make
 *   a server on 0.0.0.0 safe without credentials.
 * - a security downgrade — every API key removed, every admin user removed,
 *   TLS removed from any port, the /metrics token removed, a key or a user
 *   given more than it had, producers allowed queues or job types they were
 *   not, a proxy trusted that was not (reload-rights.ts) — unless the
 *   request explicitly allows it (`sepp config reload
 *   --allow-security-downgrade`, ReloadConfig's `allow_security_downgrade`).
 *   SIGHUP never does: a signal cannot say "I mean it", and a file cut short
 *   by a full disk must not turn authentication off. The flag never overrides
 *   the start-up rule.
 */
import type { ConfigProblem } from './config-error.ts';
import { credentialRules, unauthenticatedNetworkProblem } from './cross-section-checks.ts';
import type { ListenAddress } from './listen-address.ts';
import { rightsGained } from './reload-rights.ts';
import type { SeppConfig } from './types.ts';

export interface ReloadSafetyInput {
  readonly running: SeppConfig;
  readonly next: SeppConfig;
  /** The addresses the server listens on (with the ports it bound). */
  readonly listening: {
    readonly grpc: ListenAddress;
    readonly admin: ListenAddress;
    /** The HTTP API's address; null when it is off (turning it on takes a restart). */
    readonly http: ListenAddress | null;
  };
  /** The request asked, explicitly, to let a downgrade through. */
  readonly allowSecurityDowngrade: boolean;
}

export interface ReloadSafety {
  /** Why the reload is refused; empty when it may go ahead. */
  readonly problems: readonly ConfigProblem[];
  /** The settings whose change lowers security (`grpc.api_keys`, `admin.tls`), refused or allowed. */
  readonly downgrades: readonly string[];
}

const asking =
  'a reload does not lower security unless asked to: run `sepp config reload --allow-security-downgrade` ' +
  '(ReloadConfig with allow_security_downgrade), or restart sepp with this file; SIGHUP never lowers security';

export function checkReloadSafety(input: ReloadSafetyInput): ReloadSafety {
  const { running, next, listening } = input;
  const incomplete = incompleteFile(running, next);
  if (incomplete !== undefined) return { problems: [incomplete], downgrades: [] };
  const problems: ConfigProblem[] = [];
  const rules = credentialRules(
    { grpcListen: listening.grpc, adminListen: listening.admin, httpListen: listening.http },
    next.grpc,
    next.admin,
    next.http,
  );
  for (const rule of rules) {
    const problem = unauthenticatedNetworkProblem(rule, true);
    if (problem !== undefined) problems.push(problem);
  }
  const lowered: { key: string; is: boolean; what: string; shown?: string }[] = [
    {
      key: 'grpc.api_keys',
      is: running.grpc.apiKeys.length > 0 && next.grpc.apiKeys.length === 0,
      what: 'the file has no API key: every gRPC call, with any key or none, would be allowed everything',
    },
    {
      key: 'admin.users',
      is: running.admin.users.length > 0 && next.admin.users.length === 0,
      what: 'the file has no admin user: from the next restart the admin UI and its API would need no login',
    },
    {
      key: 'grpc.tls',
      is: running.grpc.tls !== null && next.grpc.tls === null,
      what: 'the file has no [grpc.tls]: from the next restart API keys and jobs would cross the network in clear text',
    },
    {
      key: 'admin.tls',
      is: running.admin.tls !== null && next.admin.tls === null,
      what: 'the file has no [admin.tls]: from the next restart passwords and session cookies would cross the network in clear text',
    },
    {
      key: 'http.tls',
      is: running.http.tls !== null && next.http.tls === null,
      what: 'the file has no [http.tls]: from the next restart API keys and jobs would cross the network in clear text',
    },
    {
      key: 'telemetry.metrics_token',
      is: running.telemetry.metricsTokenSha256 !== null && next.telemetry.metricsTokenSha256 === null,
      what: 'the file has no telemetry.metrics_token: /metrics would answer anyone',
    },
    ...rightsGained(running, next).map((gained) => ({
      key: gained.setting,
      is: true,
      shown: gained.shown,
      what: gained.message,
    })),
  ].filter((change) => change.is);
  if (!input.allowSecurityDowngrade) {
    const startUp = new Set(problems.map((p) => p.key));
    for (const change of lowered) {
      // The start-up rule's problem says more (and the flag would not lift it).
      if (startUp.has(change.key)) continue;
      problems.push({ key: change.key, message: `${change.what}; ${asking}` });
    }
  }
  const shown = lowered.map((change) => change.shown ?? change.key);
  return { problems, downgrades: [...new Set(shown)] };
}

/** The file is gone, or holds nothing, while the running configuration came from a file with settings. */
function incompleteFile(running: SeppConfig, next: SeppConfig): ConfigProblem | undefined {
  if (running.configFile !== null && next.configFile === null) {
    return {
      key: running.configFile,
      message:
        'the config file the server started with is gone, so nothing changed; put it back, ' +
        'or restart sepp to run without one',
    };
  }
  if (next.configFile !== null && settingsInFile(next) === 0 && settingsInFile(running) > 0) {
    return {
      key: next.configFile,
      message:
        'the file has no settings (it is empty or holds only comments), so nothing changed: a reload never ' +
        'replaces the running configuration with the defaults; if the file was cut short (a full disk, an ' +
        'interrupted copy), restore it, or restart sepp to run on the defaults',
    };
  }
  return undefined;
}

function settingsInFile(config: SeppConfig): number {
  const fromFile = Object.values(config.sources).filter((source) => source === 'file').length;
  return fromFile + Object.keys(config.engine.queues).length;
}
