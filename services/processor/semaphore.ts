/** At most `permits` pieces of work at once; the rest wait in arrival order. */
export class Semaphore {
  private readonly waiting: (() => void)[] = [];
  private used = 0;

  constructor(private readonly permits: number) {}

  async run<T>(work: () => Promise<T>): Promise<T> {
    if (this.used >= this.permits) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.used++;
    try {
      return await work();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.used--;
    }
  }
}
