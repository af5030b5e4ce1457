/**
 * The engine words its messages for the protocol and names fields as the
 * .proto files do (`ttl_ms is -1`, `pass back next_page_token unchanged`);
 * this API names the same fields in lowerCamelCase (docs/http.md, JSON). An
 * operation's messages are rewritten into its own names: the fields of its
 * request body, its query parameters and its answer, and only those, as
 * whole words that are not part of a dotted name — settings keep the names
 * sepp.toml gives them (`limits.max_batch_jobs`, `max_payload_bytes`).
 */
import type { JsonSchema } from './schema-primitives.ts';

export class ApiNames {
  private constructor(
    private readonly pattern: RegExp | null,
    private readonly camelOf: ReadonlyMap<string, string>,
  ) {}

  /** The names of the fields `schemas` hold (following `$ref`s into `components`) and of `extra`. */
  static of(
    schemas: readonly JsonSchema[],
    components: Readonly<Record<string, JsonSchema>>,
    extra: readonly string[] = [],
  ): ApiNames {
    const names = new Set(extra);
    const seen = new Set<unknown>();
    const visit = (schema: unknown): void => {
      if (typeof schema !== 'object' || schema === null || seen.has(schema)) return;
      seen.add(schema);
      const { $ref, properties, items } = schema as JsonSchema;
      if (typeof $ref === 'string') visit(components[$ref.replace('#/components/schemas/', '')]);
      if (typeof properties === 'object' && properties !== null) {
        for (const [name, property] of Object.entries(properties)) {
          names.add(name);
          visit(property);
        }
      }
      visit(items);
    };
    for (const schema of schemas) visit(schema);
    const camelOf = new Map<string, string>();
    for (const name of names) {
      const snake = name.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
      if (snake !== name) camelOf.set(snake, name);
    }
    // Longest first, so that debounce_max_ms is not read as debounce_… and the rest.
    const alternatives = [...camelOf.keys()].sort((a, b) => b.length - a.length);
    return new ApiNames(
      alternatives.length === 0 ? null : new RegExp(`(?<![\\w.])(${alternatives.join('|')})(?![\\w])`, 'g'),
      camelOf,
    );
  }

  /** `message` with the protocol's name of each of these fields replaced by this API's. */
  rewrite(message: string): string {
    if (this.pattern === null) return message;
    return message.replace(this.pattern, (snake) => this.camelOf.get(snake) ?? snake);
  }
}
