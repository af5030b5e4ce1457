/** Number formatting for the markdown tables; `–` marks a figure that was not measured. */

const dash = '–';

export function rate(v: number | undefined): string {
  return v === undefined ? dash : Math.round(v).toLocaleString('en-US');
}

export function ratio(v: number | undefined, base: number | undefined): string {
  return v === undefined || base === undefined || base === 0 ? dash : `${(v / base).toFixed(2)}×`;
}

/** Milliseconds with precision that suits the size: 0.123, 1.23, 12.3, 123. */
export function ms(v: number | undefined): string {
  if (v === undefined) return dash;
  if (v < 1) return v.toFixed(3);
  if (v < 10) return v.toFixed(2);
  if (v < 100) return v.toFixed(1);
  return Math.round(v).toString();
}

export function int(v: number | undefined): string {
  return v === undefined ? dash : Math.round(v).toLocaleString('en-US');
}

export function mb(bytes: number | undefined): string {
  return bytes === undefined ? dash : Math.round(bytes / 2 ** 20).toString();
}

export function fixed(v: number | undefined, digits: number): string {
  return v === undefined ? dash : v.toFixed(digits);
}

export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[]): string {
  const line = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n');
}
