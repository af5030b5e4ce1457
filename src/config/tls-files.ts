/**
 * Whether a `[grpc.tls]` or `[admin.tls]` pair of files can serve TLS: a
 * certificate in cert_file, an unencrypted private key in key_file, and the
 * key belonging to the certificate. Each problem names the file to fix, so a
 * bad key is never blamed on the listen address (it used to surface as a
 * failure to listen), and `sepp config check` finds it before a start does.
 */
import { createPrivateKey, type KeyObject, X509Certificate } from 'node:crypto';
import { createSecureContext } from 'node:tls';

export interface TlsFileProblem {
  readonly file: 'cert_file' | 'key_file';
  readonly message: string;
}

const certificateBlock = /-----BEGIN CERTIFICATE-----/;
const privateKeyBlock = /-----BEGIN [A-Z ]*PRIVATE KEY-----/;
const encryptedKey = /-----BEGIN ENCRYPTED PRIVATE KEY-----|Proc-Type: *4, *ENCRYPTED/;

/** The OpenSSL reason without its error-code prefix ("error:05800074:x509 certificate routines::"). */
function reason(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.replace(/^error:[0-9A-F]+:[^:]*::?/, '');
}

function readCertificate(pem: string): X509Certificate | TlsFileProblem {
  if (!certificateBlock.test(pem)) {
    const swapped = privateKeyBlock.test(pem)
      ? '; it holds a private key: are cert_file and key_file swapped?'
      : '';
    return { file: 'cert_file', message: `holds no PEM certificate (-----BEGIN CERTIFICATE-----)${swapped}` };
  }
  try {
    return new X509Certificate(pem);
  } catch (error) {
    return { file: 'cert_file', message: `holds a certificate that cannot be read: ${reason(error)}` };
  }
}

function readKey(pem: string): KeyObject | TlsFileProblem {
  if (encryptedKey.test(pem)) {
    return {
      file: 'key_file',
      message:
        'holds an encrypted private key; sepp needs it unencrypted (`openssl pkey -in KEY -out KEY.plain`) and protected by file permissions (chmod 600)',
    };
  }
  if (!privateKeyBlock.test(pem)) {
    const swapped = certificateBlock.test(pem)
      ? '; it holds a certificate: are cert_file and key_file swapped?'
      : '';
    return { file: 'key_file', message: `holds no PEM private key (-----BEGIN PRIVATE KEY-----)${swapped}` };
  }
  try {
    return createPrivateKey(pem);
  } catch (error) {
    return { file: 'key_file', message: `holds a private key that cannot be read: ${reason(error)}` };
  }
}

/** What is wrong with a certificate and key (PEM text); empty when they can serve TLS. */
export function tlsPairProblems(certPem: string, keyPem: string): TlsFileProblem[] {
  const cert = readCertificate(certPem);
  const key = readKey(keyPem);
  const problems = [cert, key].filter((x): x is TlsFileProblem => 'file' in x);
  if (problems.length > 0 || !(cert instanceof X509Certificate) || 'file' in key) return problems;
  if (!cert.checkPrivateKey(key)) {
    return [
      {
        file: 'key_file',
        message: `is not the private key of the certificate in cert_file (${cert.subject.replace(/\n/g, ', ')})`,
      },
    ];
  }
  try {
    createSecureContext({ cert: certPem, key: keyPem });
  } catch (error) {
    return [{ file: 'cert_file', message: `with key_file, TLS refuses the pair: ${reason(error)}` }];
  }
  return [];
}

/** Reads both files and checks them; a file that cannot be read is a problem of its own. */
export function tlsFilesProblems(
  files: { certFile: string; keyFile: string },
  readFile: (path: string) => string,
): TlsFileProblem[] {
  const read = (file: TlsFileProblem['file'], path: string): string | TlsFileProblem => {
    try {
      return readFile(path);
    } catch (error) {
      const code = error instanceof Error && 'code' in error ? ` (${String(error.code)})` : '';
      return { file, message: `cannot read ${path}${code}` };
    }
  };
  const cert = read('cert_file', files.certFile);
  const key = read('key_file', files.keyFile);
  if (typeof cert !== 'string' || typeof key !== 'string') {
    return [cert, key].filter((x): x is TlsFileProblem => typeof x !== 'string');
  }
  return tlsPairProblems(cert, key);
}
