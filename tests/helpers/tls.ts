/** A throwaway self-signed certificate for localhost and 127.0.0.1 (openssl), for TLS tests. */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface TestCertificate {
  certFile: string;
  keyFile: string;
  certPem: string;
  /** The `[section.tls]` table naming both files. */
  toml(section: 'grpc' | 'admin'): string;
}

/** Writes cert.pem and key.pem (P-256, valid one day) into `dir`. */
export function selfSignedCertificate(dir: string): TestCertificate {
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-days',
      '1',
      '-subj',
      '/CN=localhost',
      '-addext',
      'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout',
      keyFile,
      '-out',
      certFile,
    ],
    { stdio: 'ignore' },
  );
  return {
    certFile,
    keyFile,
    certPem: readFileSync(certFile, 'utf8'),
    toml: (section) => `[${section}.tls]\ncert_file = "${certFile}"\nkey_file = "${keyFile}"\n`,
  };
}
