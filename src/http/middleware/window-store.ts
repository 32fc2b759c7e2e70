/**
 * Fixed-window counters in a store of bounded size. A check is O(1) whatever the number of
 * distinct keys: a new key past `capacity` evicts the longest-standing window (Map insertion order)
 * instead of scanning for expired ones (issue 10 item 4: the old limiter scanned every window once
 * it held 100k keys, 1.5 ms a check). An evicted key starts a fresh window, so an attacker who
 * sprays keys can at most reset the oldest counters, never slow a check down; callers that must
 * hold against sprays (failed authentication) key by something the attacker has few of: the
 * client address.
 */
export class WindowStore {
  private windows = new Map<string, { start: number; count: number }>();

  constructor(
    readonly windowMs: number,
    readonly capacity = 100_000,
  ) {}

  get size(): number {
    return this.windows.size;
  }

  /** Add `n` to the key's window (starting a new one when the last expired); returns it. */
  add(key: string, now: number, n = 1): { start: number; count: number } {
    let w = this.windows.get(key);
    if (!w || now - w.start >= this.windowMs) {
      // Re-insert so insertion order stays the order windows started in.
      if (w) this.windows.delete(key);
      else if (this.windows.size >= this.capacity) this.windows.delete(this.windows.keys().next().value!);
      w = { start: now, count: 0 };
      this.windows.set(key, w);
    }
    w.count += n;
    return w;
  }

  /** The key's current count (0 when it has no live window). */
  peek(key: string, now: number): { start: number; count: number } | null {
    const w = this.windows.get(key);
    return w && now - w.start < this.windowMs ? w : null;
  }
}
