/**
 * The performance targets' figures, gathered from the benches into one table by `run.ts`
 * (`npm run bench`). A bench records each figure it measured with `recordTarget`; when run alone
 * (no `BENCH_TARGETS_FILE`) the row is only printed.
 */
import { appendFileSync } from 'node:fs';

export interface TargetRow {
  /** Which target, e.g. "1 accept rate, all-in-one embedded". */
  target: string;
  /** What was measured, with its unit. */
  figure: string;
  /** What it is compared with (a bare route in the same run, or the target's own bound). */
  baseline: string;
  /** figure / baseline when both are rates; undefined when the comparison is with a bound. */
  ratio?: number;
  /** The target's bound, e.g. "≥ 0.5×". */
  goal: string;
  /** Whether the bound is met; undefined when not measured here. */
  met?: boolean;
  /** The command that measured it. */
  command: string;
}

export const recordTarget = (row: TargetRow): void => {
  const file = process.env.BENCH_TARGETS_FILE;
  if (file) appendFileSync(file, `${JSON.stringify(row)}\n`);
  else
    console.log(
      `target ${row.target}: ${row.figure} vs ${row.baseline}${row.ratio === undefined ? '' : ` (${row.ratio.toFixed(3)}×)`}, goal ${row.goal}: ${row.met === undefined ? 'not measured' : row.met ? 'met' : 'not met'}`,
    );
};
