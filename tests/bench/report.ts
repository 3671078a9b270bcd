/** Prints benchmark rows as a table of rates and ratios against the group's baseline row. */
export interface Row {
  name: string;
  perSecond: number;
  /** The row the following rows are compared with (until the next baseline). */
  baseline?: boolean;
}

export const report = (title: string, rows: Row[]): void => {
  console.log(`\n${title}`);
  let base: number | undefined;
  for (const row of rows) {
    if (row.baseline) base = row.perSecond;
    const ratio = row.baseline || base === undefined ? 'baseline' : `${(row.perSecond / base).toFixed(2)}× baseline`;
    console.log(`  ${row.name.padEnd(72)} ${Math.round(row.perSecond).toLocaleString('en-US').padStart(10)} /s   ${ratio}`);
  }
};
