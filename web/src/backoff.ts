// Backoff between retries: 250 ms doubling to 4 s, with jitter, cut short
// by wake() (the browser came back online).

export class Backoff {
  private delay = 250;
  private wakeUp?: () => void;

  reset(): void {
    this.delay = 250;
  }

  wait(): Promise<void> {
    const d = this.delay * (0.75 + Math.random() * 0.5);
    this.delay = Math.min(this.delay * 2, 4_000);
    return new Promise((resolve) => {
      const t = setTimeout(done, d);
      const self = this;
      function done(): void {
        clearTimeout(t);
        if (self.wakeUp === done) self.wakeUp = undefined;
        resolve();
      }
      this.wakeUp = done;
    });
  }

  /** wake ends the current wait now and resets the delay. */
  wake(): void {
    this.reset();
    this.wakeUp?.();
  }
}
