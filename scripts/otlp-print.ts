/**
 * A stand-in OTLP/HTTP collector for looking at sepp's spans without
 * installing one: prints each span it receives on one line (trace id, span
 * id, parent, name, attributes, links). It accepts the JSON encoding that
 * sepp's exporters send; metrics pushes are acknowledged and ignored.
 *
 *   npx tsx scripts/otlp-print.ts [port]      # default 4318, then:
 *   SEPP_OTLP_ENDPOINT=http://127.0.0.1:4318 npm start
 */
import { createServer } from 'node:http';

interface KeyValue {
  key: string;
  value: Record<string, unknown>;
}
interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  attributes?: KeyValue[];
  links?: { traceId: string; spanId: string }[];
}
interface Traces {
  resourceSpans?: { scopeSpans?: { spans?: Span[] }[] }[];
}

const port = Number(process.argv[2] ?? 4318);
const show = (attributes: KeyValue[] | undefined) =>
  (attributes ?? []).map(({ key, value }) => `${key}=${String(Object.values(value)[0])}`).join(' ');

createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (c: Buffer) => chunks.push(c));
  request.on('end', () => {
    if (request.url === '/v1/traces') {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Traces;
      for (const rs of body.resourceSpans ?? [])
        for (const ss of rs.scopeSpans ?? [])
          for (const s of ss.spans ?? []) {
            const links = (s.links ?? []).map((l) => ` link=${l.traceId}/${l.spanId}`).join('');
            console.log(
              `trace=${s.traceId} span=${s.spanId} parent=${s.parentSpanId || '-'} ${s.name} ${show(s.attributes)}${links}`,
            );
          }
    }
    response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
  });
}).listen(port, '127.0.0.1', () =>
  console.log(`OTLP/HTTP on http://127.0.0.1:${port} (JSON); printing spans`),
);
