/**
 * How long a server that failed is left alone by default: a dead server then costs one failed attempt per half
 * minute rather than one per request, and a restarted one is used again within half a minute.
 */
export const DEFAULT_COOL_DOWN_MS = 30_000;

/**
 * What a skipped caller is told to wait while another request probes the server: the probe settles within its
 * timeouts, and asking again a second later finds the breaker closed or open with a real cool-down.
 */
const PROBE_WAIT_MS = 1_000;

/**
 * Keeps a server that failed from being called on every request. Closed, every call goes through. A failure opens it
 * for a cool-down, during which callers skip the server (and fall over to the next candidate); then one call is let
 * through as a probe: its success closes the breaker, its failure opens it for another cool-down.
 *
 * @example
 * if (!breaker.tryAcquire()) return skip(breaker.retryInMs());
 * try { await call(); breaker.succeeded(); } catch { breaker.failed(); }
 */
export class CircuitBreaker {
  readonly #coolDownMs: number;
  readonly #now: () => number;
  /** When the cool-down ends; 0 while closed. */
  #openUntil = 0;
  #probing = false;

  constructor(coolDownMs = DEFAULT_COOL_DOWN_MS, now: () => number = Date.now) {
    this.#coolDownMs = coolDownMs;
    this.#now = now;
  }

  get state(): 'closed' | 'open' | 'half-open' {
    if (this.#openUntil === 0) return 'closed';
    return this.#now() < this.#openUntil ? 'open' : 'half-open';
  }

  /** Whether a call may go to the server now; after a cool-down, the first caller becomes the probe. */
  tryAcquire(): boolean {
    const state = this.state;
    if (state === 'closed') return true;
    if (state === 'open' || this.#probing) return false;
    this.#probing = true;
    return true;
  }

  /** Whether a call would be let through now, without becoming the probe. */
  get available(): boolean {
    return this.state === 'closed' || (this.state === 'half-open' && !this.#probing);
  }

  /** How long until the server may be tried again, in milliseconds (0 while closed). */
  retryInMs(): number {
    if (this.#openUntil === 0) return 0;
    return Math.max(this.#openUntil - this.#now(), this.#probing ? PROBE_WAIT_MS : 0);
  }

  /** The server answered: it is alive (whatever it answered). */
  succeeded(): void {
    this.#openUntil = 0;
    this.#probing = false;
  }

  /** The server could not be reached, did not answer, or failed: leave it alone for a cool-down. */
  failed(): void {
    this.#openUntil = this.#now() + this.#coolDownMs;
    this.#probing = false;
  }

  /** A call ended without saying anything about the server (its client went away): the next caller may probe. */
  released(): void {
    this.#probing = false;
  }
}
