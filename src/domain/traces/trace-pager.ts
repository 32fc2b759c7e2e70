/**
 * Newest-first trace pages from a newest-first stream of spans.
 *
 * The trace list reads spans (all spans, error spans, or entry spans matching the filters) in
 * descending start time and loads each new trace it meets. A trace's start is at or before the start
 * of any of its spans, so once the stream has passed below the start of the `need`-th newest trace
 * accepted so far, no unseen trace can start later: the page is final. Long traces can therefore be
 * met after shorter, newer ones and still land in their place.
 */
export interface PagedTrace {
  trace_id: string;
  started_ms: number;
}

export class TracePager<T extends PagedTrace> {
  private readonly seenIds = new Set<string>();
  private readonly accepted: T[] = [];
  private startsDesc: number[] | null = null;

  /** `need` = offset + limit + 1 (one more than the page, to know whether another page exists). */
  constructor(private readonly need: number) {
    if (!Number.isInteger(need) || need < 1) throw new RangeError(`need must be a positive integer, got ${need}`);
  }

  /** True the first time a trace id is offered (the caller then loads and judges it). */
  firstSight(traceId: string): boolean {
    if (this.seenIds.has(traceId)) return false;
    this.seenIds.add(traceId);
    return true;
  }

  /** A loaded trace that passed every filter. */
  accept(trace: T): void {
    this.accepted.push(trace);
    this.startsDesc = null;
  }

  /** Traces examined so far (accepted or not). */
  get examined(): number {
    return this.seenIds.size;
  }

  /**
   * Whether the page is final once the stream has reached a span starting at `streamStartMs` (every
   * later span of the stream starts at or before it).
   */
  complete(streamStartMs: number): boolean {
    if (this.accepted.length < this.need) return false;
    return streamStartMs < this.kthStart(this.need);
  }

  private kthStart(k: number): number {
    this.startsDesc ??= this.accepted.map((t) => t.started_ms).sort((a, b) => b - a);
    return this.startsDesc[k - 1]!;
  }

  /** Accepted traces newest first (ties by trace id), sliced to the page. */
  page(offset: number, limit: number): { rows: T[]; hasMore: boolean } {
    const sorted = [...this.accepted].sort((a, b) => b.started_ms - a.started_ms || (a.trace_id < b.trace_id ? -1 : a.trace_id > b.trace_id ? 1 : 0));
    return { rows: sorted.slice(offset, offset + limit), hasMore: sorted.length > offset + limit };
  }
}
