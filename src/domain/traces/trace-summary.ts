/**
 * One trace from its spans: which span stands for the trace (its root), the trace's extent, span and
 * error counts, services and status, and the parent/child structure of its spans.
 */

/** OTLP SpanKind numbers → names. */
export const SPAN_KIND_NAMES = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'] as const;
export type SpanKindName = (typeof SPAN_KIND_NAMES)[number];

export const SPAN_KIND = { unspecified: 0, internal: 1, server: 2, client: 3, producer: 4, consumer: 5 } as const;
/** OTLP status code of a failed span. */
export const STATUS_ERROR = 2;

export function spanKindName(kind: number): SpanKindName {
  return SPAN_KIND_NAMES[kind] ?? 'unspecified';
}

/** OTLP status code → `unset` (0), `ok` (1), `error` (2). */
export function spanStatusName(code: number): 'unset' | 'ok' | 'error' {
  return code === STATUS_ERROR ? 'error' : code === 1 ? 'ok' : 'unset';
}

/**
 * An entry span is where a request enters a service: a server or consumer span, or a root span (no
 * parent). Trace operations, service-map request counts and the trace-list filters read entry spans.
 */
export function isEntrySpan(s: { kind: number; parent_span_id: string | null }): boolean {
  return s.kind === SPAN_KIND.server || s.kind === SPAN_KIND.consumer || s.parent_span_id === null;
}

/** The span fields a summary needs. */
export interface SpanCore {
  span_id: string;
  parent_span_id: string | null;
  name: string;
  operation: string;
  kind: number;
  service_name: string;
  environment: string;
  start_ms: number;
  end_ms: number;
  status_code: number;
}

export interface TraceSummary<S extends SpanCore = SpanCore> {
  /** The span that stands for the trace: the earliest span without a parent; when the trace has none
   * (its root was never received), the earliest span whose parent is not among the spans. */
  root: S;
  /** False when the root was not received and `root` is the earliest orphan span. */
  has_root: boolean;
  started_ms: number;
  ended_ms: number;
  duration_ms: number;
  span_count: number;
  /** Spans with error status. */
  error_count: number;
  /** Distinct service names, sorted. */
  services: string[];
  status: 'ok' | 'error';
}

const byStart = (a: SpanCore, b: SpanCore) => a.start_ms - b.start_ms || (a.span_id < b.span_id ? -1 : a.span_id > b.span_id ? 1 : 0);

/** Summary of a trace's spans; null when there are none. */
export function summarizeTrace<S extends SpanCore>(spans: readonly S[]): TraceSummary<S> | null {
  if (spans.length === 0) return null;
  let started = Infinity;
  let ended = -Infinity;
  let errors = 0;
  const services = new Set<string>();
  const ids = new Set<string>();
  let root: S | null = null;
  for (const s of spans) {
    ids.add(s.span_id);
    if (s.start_ms < started) started = s.start_ms;
    if (s.end_ms > ended) ended = s.end_ms;
    if (s.status_code === STATUS_ERROR) errors++;
    services.add(s.service_name);
    if (s.parent_span_id === null && (root === null || byStart(s, root) < 0)) root = s;
  }
  const hasRoot = root !== null;
  if (!root) {
    for (const s of spans) {
      if (s.parent_span_id !== null && ids.has(s.parent_span_id)) continue;
      if (root === null || byStart(s, root) < 0) root = s;
    }
  }
  // Every span has a parent inside the trace only when parent links form a cycle: take the earliest.
  if (!root) root = [...spans].sort(byStart)[0]!;
  if (ended < started) ended = started;
  return {
    root,
    has_root: hasRoot,
    started_ms: started,
    ended_ms: ended,
    duration_ms: ended - started,
    span_count: spans.length,
    error_count: errors,
    services: [...services].sort(),
    status: errors > 0 ? 'error' : 'ok',
  };
}

export interface SpanTreeInfo {
  /** 0 for a span without a parent in the trace, else its parent's depth + 1. */
  depth: number;
  /** Direct children among the trace's spans. */
  children: number;
  /** The span names a parent that is not among the trace's spans (not received, or dropped). */
  parent_missing: boolean;
}

/**
 * Depth and child counts of every span (keyed by span id). Robust to parent links that form a cycle
 * or point at a missing span: such spans are treated as tops of their own subtree.
 */
export function spanTree(spans: readonly Pick<SpanCore, 'span_id' | 'parent_span_id'>[]): Map<string, SpanTreeInfo> {
  const parentOf = new Map<string, string | null>();
  for (const s of spans) parentOf.set(s.span_id, s.parent_span_id);
  const out = new Map<string, SpanTreeInfo>();
  for (const s of spans) {
    const p = s.parent_span_id;
    out.set(s.span_id, { depth: -1, children: 0, parent_missing: p !== null && !parentOf.has(p) });
  }
  for (const s of spans) {
    const p = s.parent_span_id;
    if (p !== null && p !== s.span_id && out.has(p)) out.get(p)!.children++;
  }
  for (const s of spans) {
    if (out.get(s.span_id)!.depth >= 0) continue;
    // Walk up to a span of known depth (or a top), then assign depths on the way back down.
    const path: string[] = [];
    const onPath = new Set<string>();
    let cur: string | null = s.span_id;
    let base = -1;
    while (cur !== null) {
      const info = out.get(cur);
      if (!info) break; // parent not in the trace: the previous span is a top
      if (info.depth >= 0) {
        base = info.depth;
        break;
      }
      if (onPath.has(cur)) break; // cycle: the span where it closes becomes a top
      path.push(cur);
      onPath.add(cur);
      cur = parentOf.get(cur) ?? null;
    }
    for (let i = path.length - 1; i >= 0; i--) out.get(path[i]!)!.depth = ++base;
  }
  return out;
}

/** Spans in display order: by start time, parents before children at equal start, then by id. */
export function orderSpans<S extends SpanCore>(spans: readonly S[], tree: Map<string, SpanTreeInfo>): S[] {
  return [...spans].sort(
    (a, b) => a.start_ms - b.start_ms || tree.get(a.span_id)!.depth - tree.get(b.span_id)!.depth || (a.span_id < b.span_id ? -1 : a.span_id > b.span_id ? 1 : 0),
  );
}
