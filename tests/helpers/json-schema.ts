/**
 * A small JSON Schema check for the answers of the HTTP API against its
 * OpenAPI document: `$ref` into components, `type` (one or a list;
 * `integer`), `enum`, `properties`, `required`, `items` and
 * `additionalProperties`. Enough for the schemas sepp writes; a keyword it
 * does not know fails loudly rather than passing silently.
 */
type Schema = Record<string, unknown>;

const known = new Set([
  '$ref',
  'type',
  'enum',
  'properties',
  'required',
  'items',
  'additionalProperties',
  'description',
  'format',
  'minimum',
  'maximum',
  'pattern',
  'contentEncoding',
]);

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

/** The problems of `value` against `schema` (empty when it matches). */
export function schemaProblems(
  schema: Schema,
  value: unknown,
  components: Readonly<Record<string, Schema>>,
  at = '$',
): string[] {
  for (const key of Object.keys(schema)) {
    if (!known.has(key)) return [`${at}: the schema uses ${key}, which this checker does not know`];
  }
  if (typeof schema.$ref === 'string') {
    const name = schema.$ref.replace('#/components/schemas/', '');
    const target = components[name];
    if (target === undefined) return [`${at}: no schema ${name}`];
    return schemaProblems(target, value, components, at);
  }
  const problems: string[] = [];
  if (schema.type !== undefined) {
    const types = Array.isArray(schema.type) ? (schema.type as string[]) : [schema.type as string];
    const actual = typeOf(value);
    const fits = types.includes(actual) || (actual === 'integer' && types.includes('number'));
    if (!fits) return [`${at}: ${actual}, expected ${types.join(' or ')}`];
  }
  if (Array.isArray(schema.enum) && !schema.enum.includes(value)) {
    problems.push(`${at}: ${JSON.stringify(value)} is not one of ${JSON.stringify(schema.enum)}`);
  }
  if (typeOf(value) === 'object') {
    const object = value as Record<string, unknown>;
    const properties = (schema.properties ?? {}) as Record<string, Schema>;
    for (const name of (schema.required ?? []) as string[]) {
      if (!(name in object)) problems.push(`${at}.${name}: required`);
    }
    for (const [name, field] of Object.entries(object)) {
      const fieldSchema = properties[name];
      if (fieldSchema !== undefined)
        problems.push(...schemaProblems(fieldSchema, field, components, `${at}.${name}`));
      else if (schema.additionalProperties === false) problems.push(`${at}.${name}: not in the schema`);
      else if (typeof schema.additionalProperties === 'object' && schema.additionalProperties !== null) {
        problems.push(
          ...schemaProblems(schema.additionalProperties as Schema, field, components, `${at}.${name}`),
        );
      } else if (schema.properties !== undefined && schema.type !== undefined) {
        problems.push(`${at}.${name}: not documented`);
      }
    }
  }
  if (Array.isArray(value) && schema.items !== undefined) {
    for (const [i, item] of value.entries()) {
      problems.push(...schemaProblems(schema.items as Schema, item, components, `${at}[${i}]`));
    }
  }
  return problems;
}
