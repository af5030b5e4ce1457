/**
 * Reading a JSON request body field by field, with messages that name the
 * field (`jobs[2].priority: …`). Field names are the protocol's JSON names
 * (lowerCamelCase, as proto3's JSON mapping writes them); a field the
 * operation does not know is refused with the likeliest one meant, so a typo
 * (`waitTimeoutMS`) is an error rather than a silent default. Integers are
 * accepted as JSON numbers or as strings of digits (proto3's JSON form of
 * 64-bit numbers). Semantic checks (ranges, names, sizes) stay with the
 * engine, which applies the same rules to every transport.
 */
import { closestKey } from '../config/index.ts';
import { holdsNul, nulRefusal } from '../engine/checks.ts';
import { invalid } from './errors.ts';
import { arraySpans, objectSpans } from './raw-json.ts';

type JsonObject = Readonly<Record<string, unknown>>;

function isObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export class JsonInput {
  private spans: Map<string, { start: number; end: number }> | undefined;

  constructor(
    readonly value: JsonObject,
    /** The request's text, for values kept byte for byte (`json`). */
    private readonly text: string,
    /** Where this object starts in `text`. */
    private readonly start: number,
    /** `jobs[2]`, or '' for the body itself. */
    readonly path: string,
  ) {}

  /** The body of a request: `text` is valid JSON (already parsed into `value`). */
  static body(text: string, value: unknown): JsonInput {
    if (!isObject(value)) throw invalid('the request body must be a JSON object');
    return new JsonInput(value, text, 0, '');
  }

  /** `field` as it appears in messages: `jobs[2].priority`. */
  name(field: string): string {
    return this.path === '' ? field : `${this.path}.${field}`;
  }

  /** Refuses any field not in `known`, naming the closest known one. */
  only(known: readonly string[]): this {
    for (const key of Object.keys(this.value)) {
      if (known.includes(key)) continue;
      const near = closestKey(key, known);
      throw invalid(
        `${this.name(key)}: unknown field${near === undefined ? `; the fields here are ${known.join(', ')}` : `; did you mean ${near}?`}`,
      );
    }
    return this;
  }

  has(field: string): boolean {
    const value = this.value[field];
    return value !== undefined && value !== null;
  }

  string(field: string, options: { required?: boolean; maxLength?: number } = {}): string | undefined {
    const value = this.value[field];
    if (value === undefined || value === null) {
      if (options.required) throw invalid(`${this.name(field)}: required`);
      return undefined;
    }
    if (typeof value !== 'string') throw invalid(`${this.name(field)}: must be a string`);
    if (holdsNul(value)) throw invalid(`${this.name(field)}: ${nulRefusal}`);
    const maxLength = options.maxLength ?? 1024 * 1024;
    if (value.length > maxLength) {
      throw invalid(`${this.name(field)}: ${value.length} characters, at most ${maxLength}`);
    }
    return value;
  }

  requiredString(field: string, maxLength?: number): string {
    return this.string(field, { required: true, ...(maxLength === undefined ? {} : { maxLength }) }) ?? '';
  }

  /** A whole number, as a JSON number or a string of digits (optionally negative). */
  integer(field: string, options: { required?: boolean } = {}): number | undefined {
    const value = this.value[field];
    if (value === undefined || value === null) {
      if (options.required) throw invalid(`${this.name(field)}: required`);
      return undefined;
    }
    let number: number;
    if (typeof value === 'number') number = value;
    else if (typeof value === 'string' && /^-?\d{1,20}$/.test(value)) number = Number(value);
    else throw invalid(`${this.name(field)}: must be an integer (a number, or a string of digits)`);
    if (!Number.isSafeInteger(number)) {
      throw invalid(
        `${this.name(field)}: ${String(value).slice(0, 32)} is not an integer between -2^53 and 2^53`,
      );
    }
    return number;
  }

  /** A number (not necessarily whole), as a JSON number or a numeric string. */
  number(field: string): number | undefined {
    const value = this.value[field];
    if (value === undefined || value === null) return undefined;
    const number =
      typeof value === 'number'
        ? value
        : typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value)
          ? Number(value)
          : Number.NaN;
    if (!Number.isFinite(number)) throw invalid(`${this.name(field)}: must be a number`);
    return number;
  }

  boolean(field: string): boolean | undefined {
    const value = this.value[field];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'boolean') throw invalid(`${this.name(field)}: must be true or false`);
    return value;
  }

  /** An object of strings (metadata). */
  stringMap(field: string): Record<string, string> | undefined {
    const value = this.value[field];
    if (value === undefined || value === null) return undefined;
    if (!isObject(value)) throw invalid(`${this.name(field)}: must be an object of strings`);
    const result: Record<string, string> = {};
    for (const [key, v] of Object.entries(value)) {
      if (typeof v !== 'string') throw invalid(`${this.name(field)}.${key}: must be a string`);
      if (holdsNul(key) || holdsNul(v)) throw invalid(`${this.name(field)}: a key or value ${nulRefusal}`);
      result[key] = v;
    }
    return result;
  }

  /** A list of strings, at most `maxItems`. */
  strings(field: string, maxItems: number, options: { required?: boolean } = {}): string[] {
    const value = this.value[field];
    if (value === undefined || value === null) {
      if (options.required) throw invalid(`${this.name(field)}: required`);
      return [];
    }
    if (!Array.isArray(value)) throw invalid(`${this.name(field)}: must be an array of strings`);
    if (value.length > maxItems) {
      throw invalid(`${this.name(field)}: ${value.length} items, at most ${maxItems}`);
    }
    return value.map((item, i) => {
      if (typeof item !== 'string') throw invalid(`${this.name(field)}[${i}]: must be a string`);
      if (holdsNul(item)) throw invalid(`${this.name(field)}[${i}]: ${nulRefusal}`);
      return item;
    });
  }

  /** An object field, readable as a JsonInput; undefined when absent (or null) unless `required`. */
  object(field: string, options: { required?: boolean } = {}): JsonInput | undefined {
    const value = this.value[field];
    if (value === undefined || value === null) {
      if (options.required) throw invalid(`${this.name(field)}: required, an object`);
      return undefined;
    }
    if (!isObject(value)) throw invalid(`${this.name(field)}: must be an object`);
    return new JsonInput(value, this.text, this.span(field).start, this.name(field));
  }

  /** The objects of an array field, each readable as a JsonInput (how many may come is the engine's rule). */
  objects(field: string): JsonInput[] {
    const value = this.value[field];
    if (!Array.isArray(value)) throw invalid(`${this.name(field)}: required, an array of objects`);
    const spans = arraySpans(this.text, this.span(field).start);
    return value.map((item, i) => {
      if (!isObject(item)) throw invalid(`${this.name(field)}[${i}]: must be an object`);
      return new JsonInput(item, this.text, spans[i]?.start ?? 0, `${this.name(field)}[${i}]`);
    });
  }

  /** The text of a JSON value as the request wrote it (byte for byte), or undefined when absent. */
  json(field: string): string | undefined {
    if (this.value[field] === undefined) return undefined;
    const { start, end } = this.span(field);
    return this.text.slice(start, end);
  }

  private span(field: string): { start: number; end: number } {
    this.spans ??= objectSpans(this.text, this.start).members;
    const span = this.spans.get(field);
    if (span === undefined) throw new Error(`bug: no span for ${this.name(field)}`);
    return span;
  }
}
