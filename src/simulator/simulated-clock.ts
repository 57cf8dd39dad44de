/** Simulated time: it only moves forward, and only when a scenario (or a test) moves it. */
export class SimulatedClock {
  private current: number;

  constructor(start: Date) {
    this.current = start.getTime();
  }

  now(): Date {
    return new Date(this.current);
  }

  /** Moves to `time`; earlier times are ignored, so history never runs backwards. */
  advanceTo(time: Date): void {
    this.current = Math.max(this.current, time.getTime());
  }
}
