/** A sleep that `wake()` cuts short; a wake while nobody sleeps makes the next sleep return at once. */
export class Wakeup {
  private pending = false;
  private cut: (() => void) | undefined;

  sleep(ms: number): Promise<void> {
    if (this.pending) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => this.cut?.(), ms);
      this.cut = () => {
        clearTimeout(timer);
        this.cut = undefined;
        resolve();
      };
    });
  }

  wake(): void {
    if (this.cut) this.cut();
    else this.pending = true;
  }
}
