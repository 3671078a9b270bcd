/** Bench helpers: driving a load, and printing rows as rates and ratios. */

/** Runs `count` operations with at most `concurrency` in flight; returns operations per second. */
export const drive = async (
  count: number,
  concurrency: number,
  op: (i: number) => Promise<unknown>,
): Promise<number> => {
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) await op(next++);
    }),
  );
  return count / ((performance.now() - started) / 1000);
};

/** One line of a report. */
export interface Row {
  name: string;
  perSecond: number;
  /** The row the following rows are compared with (until the next baseline). */
  baseline?: boolean;
}

/** Prints rows as a table of rates and ratios against the group's baseline row. */
export const report = (title: string, rows: Row[]): void => {
  console.log(`\n${title}`);
  let base: number | undefined;
  for (const row of rows) {
    if (row.baseline) base = row.perSecond;
    const ratio = row.baseline || base === undefined ? 'baseline' : `${(row.perSecond / base).toFixed(2)}× baseline`;
    console.log(
      `  ${row.name.padEnd(72)} ${Math.round(row.perSecond).toLocaleString('en-US').padStart(10)} /s   ${ratio}`,
    );
  }
};
