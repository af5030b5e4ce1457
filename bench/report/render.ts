import { readFileSync, writeFileSync } from 'node:fs';
import type { BenchReport } from './results.ts';
import { scalingChart, throughputChart } from './svg.ts';
import { renderMarkdown } from './tables.ts';

/**
 * Renders the markdown tables and SVG charts of a results JSON again, e.g. after the
 * report's format changed, without re-running the benchmark. The command line recorded in
 * the JSON is kept: it is the one that produced the figures.
 *
 *   npx tsx bench/report/render.ts bench/results/tmp/run-X.json [OUT_PREFIX]
 */
export function writeReport(report: BenchReport, outPrefix: string): string {
  const markdown = renderMarkdown(report);
  writeFileSync(`${outPrefix}.md`, markdown);
  const charts: [string, string | undefined][] = [
    ['throughput', throughputChart(report)],
    ['w4', scalingChart(report)],
  ];
  for (const [name, chart] of charts)
    if (chart !== undefined) writeFileSync(`${outPrefix}-${name}.svg`, chart);
  return markdown;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [input, outPrefix] = process.argv.slice(2);
  if (input === undefined) {
    console.error('usage: npx tsx bench/report/render.ts RESULTS.json [OUT_PREFIX]');
    process.exit(2);
  }
  const report = JSON.parse(readFileSync(input, 'utf8')) as BenchReport;
  const prefix = outPrefix ?? input.replace(/\.json$/, '');
  writeReport(report, prefix);
  if (prefix !== input.replace(/\.json$/, '')) writeFileSync(`${prefix}.json`, readFileSync(input));
  console.error(`wrote ${prefix}.md and charts`);
}
