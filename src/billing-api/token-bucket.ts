/**
 * Token bucket arithmetic of the request budget: `rate` tokens per second, at most `burst`
 * saved up. `reserve()` takes a token now, going into debt if there is none, and returns how
 * long the caller must wait for it to be its turn. Debt makes waiters queue in arrival order
 * without a timer per waiter, and any request sequence it admits sends at most
 * `burst + rate * t` requests in any interval t, so a budget below the service's limit never
 * trips it.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private rate: number,
    private burst: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    check(rate, burst);
    this.tokens = burst;
    this.last = now();
  }

  /** Changes the rate and burst from now on; tokens saved so far stay, up to the new burst (debt stays debt). */
  setRate(rate: number, burst: number): void {
    check(rate, burst);
    this.refill();
    this.rate = rate;
    this.burst = burst;
    this.tokens = Math.min(burst, this.tokens);
  }

  /** Takes one token; returns the wait until it is due, in milliseconds (0: go now). */
  reserve(): number {
    this.refill();
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.rate) * 1000;
  }

  /** Tokens available now; negative while reservations wait. */
  available(): number {
    this.refill();
    return this.tokens;
  }

  private refill(): void {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.rate);
    this.last = t;
  }
}

function check(rate: number, burst: number): void {
  if (!(rate > 0 && Number.isFinite(rate))) throw new RangeError(`rate must be a positive number, got ${rate}`);
  if (!(burst >= 1)) throw new RangeError(`burst must be at least 1, got ${burst}`);
}
