/**
 * The error codes and enqueue rejection reasons are written in four places: the protocol
 * (proto/sepp/v1/job.proto's RejectionReason, each with the status it fails a call with),
 * the server (src/engine/errors.ts, src/rpc/status.ts), the TypeScript SDK
 * (clients/typescript/src/errors.ts) and the Python client (clients/python/src/sepp/errors.py).
 * They must say the same.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { status } from '@grpc/grpc-js';
import { seppErrorCodes, statusOfRejection } from '../../clients/typescript/src/errors.ts';
import { rejectionCode } from '../../src/engine/errors.ts';
import { grpcStatusOf } from '../../src/rpc/status.ts';

const root = new URL('../../', import.meta.url);
const proto = readFileSync(new URL('proto/sepp/v1/job.proto', root), 'utf8');

/** RejectionReason's values in the proto, as the wire's strings, with the status each comment names. */
function protoReasons(): Map<string, string> {
  const body = /enum RejectionReason \{([\s\S]*?)\n\}/.exec(proto)?.[1] ?? '';
  const reasons = new Map<string, string>();
  let comment = '';
  for (const line of body.split('\n')) {
    const text = /^\s*\/\/ ?(.*)$/.exec(line);
    if (text !== null) {
      comment += ` ${text[1]}`;
      continue;
    }
    const value = /^\s*REJECTION_REASON_(\w+) = \d+;/.exec(line);
    if (value !== null && value[1] !== 'UNSPECIFIED') {
      reasons.set(value[1]!.toLowerCase(), /Status ([A-Z_]+)/.exec(comment)?.[1] ?? '(none)');
    }
    comment = '';
  }
  return reasons;
}

/** The Python client's lists, as the package itself reports them. */
function pythonLists(): { codes: string[]; reasons: string[] } {
  const script = [
    'import json, sys',
    'from typing import get_args',
    "sys.path.insert(0, 'clients/python/src')",
    'import sepp.errors as e',
    "print(json.dumps({'codes': list(get_args(e.SeppErrorCode)), 'reasons': list(get_args(e.RejectionReason))}))",
  ].join('\n');
  return JSON.parse(execFileSync('/usr/bin/python3', ['-c', script], { cwd: root, encoding: 'utf8' }));
}

test('rejection reasons: the proto, the server, the TypeScript SDK and the Python client agree', () => {
  const reasons = protoReasons();
  assert.ok(reasons.size >= 8, `${reasons.size} reasons in job.proto`);
  const names = [...reasons.keys()].sort();
  assert.deepEqual(Object.keys(rejectionCode).sort(), names, 'src/engine/errors.ts');
  assert.deepEqual(Object.keys(statusOfRejection).sort(), names, 'clients/typescript/src/errors.ts');
  assert.deepEqual(pythonLists().reasons.sort(), names, 'clients/python/src/sepp/errors.py');
  for (const [reason, statusName] of reasons) {
    const server = grpcStatusOf[rejectionCode[reason as keyof typeof rejectionCode]];
    assert.equal(status[server], statusName, `the server fails ${reason} with the status job.proto names`);
    assert.equal(
      status[statusOfRejection[reason as keyof typeof statusOfRejection]],
      statusName,
      `the SDK expects ${reason} with the status job.proto names`,
    );
  }
});

test("error codes: the server's are the SDKs'; the SDKs have the same list", () => {
  const server = Object.keys(grpcStatusOf).sort();
  const sdk = [...seppErrorCodes].sort();
  for (const code of server) assert.ok(sdk.includes(code as (typeof sdk)[number]), `the SDK knows ${code}`);
  // Beyond the server's: what a call can end with before it reaches the server.
  assert.deepEqual(
    sdk.filter((c) => !server.includes(c)),
    ['cancelled', 'deadline_exceeded', 'unknown'],
  );
  assert.deepEqual(pythonLists().codes.sort(), sdk, 'the Python client has the same list');
});
