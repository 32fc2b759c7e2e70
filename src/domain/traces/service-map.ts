/**
 * Service map from spans: nodes (instrumented services, and the databases, message destinations and
 * external peers they call) and dependency edges.
 *
 * Edges come from two sources:
 * 1. Parent/child links across services: a span whose parent belongs to another service is a call
 *    from the parent's service to the span's service (counted, timed and judged by the child span).
 * 2. Client and producer spans that no child span of another service explains (the callee is not
 *    instrumented): the callee is named by the span's attributes — `db.system` with `peer.service`
 *    or `server.address` (a database node such as `postgresql@pg.internal`), then `messaging.system`
 *    with `messaging.destination.name` (a messaging node such as `kafka/orders`), then
 *    `peer.service`, `server.address` / `net.peer.name` (an external node). Counted, timed and
 *    judged by the client span.
 *
 * Spans are read for a set of time slices of the window (all of it when the window is small; a
 * spread sample otherwise, see {@link planSlices}); only spans starting inside a slice ("core"
 * spans) are counted, the others (a margin around each slice) serve as parents and children.
 * Sampled calls are scaled up by the exact entry-span count of the service whose span judged them
 * over its sampled entry spans (a ratio estimate), or by the sampled share of the window when that
 * service has no sampled entry spans. Each call is counted on one span only (the
 * child, or the unanswered client span), so slices never count a call twice. A partner that was not
 * read (a parent that started long before, a consumer that started long after its producer) is
 * looked up, within a budget: beyond it, the looked-up members of a group stand in for the rest.
 */
import { SPAN_KIND, STATUS_ERROR } from './trace-summary.js';
import { errorRate, roundMs, selectPercentile } from './operation-stats.js';

export type NodeKind = 'service' | 'database' | 'messaging' | 'external';

type Attrs = Record<string, unknown>;
const str = (a: Attrs, k: string): string | null => {
  const v = a[k];
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : null;
};

/** The callee a client or producer span names in its attributes, or null. */
export function peerTargetOf(attrs: Attrs): { name: string; kind: NodeKind } | null {
  const peer = str(attrs, 'peer.service');
  const host = str(attrs, 'server.address') ?? str(attrs, 'net.peer.name');
  // A database is told apart by its system and where it runs: `postgresql@orders-db` and
  // `postgresql@pg-replica` are two nodes; a database span is never an external service, even
  // when it names a peer service.
  const db = str(attrs, 'db.system') ?? str(attrs, 'db.system.name');
  if (db) {
    const at = peer ?? host;
    return { name: at ? `${db}@${at}` : db, kind: 'database' };
  }
  const mq = str(attrs, 'messaging.system');
  if (mq) {
    const dest = str(attrs, 'messaging.destination.name') ?? str(attrs, 'messaging.destination');
    return { name: dest ? `${mq}/${dest}` : mq, kind: 'messaging' };
  }
  if (peer) return { name: peer, kind: 'external' };
  if (host) return { name: host, kind: 'external' };
  return null;
}

export interface TimeSlice {
  fromMs: number;
  toMs: number;
}

/**
 * Sample slices of `[fromMs, toMs)` covering `fraction` of it: one slice per stratum (the window cut
 * into `strata` equal parts), centred in its stratum. Ordered so that any prefix is spread over the
 * whole window (van der Corput order), letting a reader stop early on a row budget. `fraction` ≥ 1 →
 * one slice, the whole window.
 */
export function planSlices(fromMs: number, toMs: number, fraction: number, strata = 24): TimeSlice[] {
  const w = toMs - fromMs;
  if (!(w > 0)) return [];
  if (!(fraction < 1)) return [{ fromMs, toMs }];
  const f = Math.max(fraction, 1e-6);
  const stratum = w / strata;
  const width = stratum * f;
  // Visit strata in van der Corput order (0, 1/2, 1/4, 3/4, …): every prefix is spread out.
  const order: number[] = [];
  const taken = new Set<number>();
  for (let i = 0; order.length < strata; i++) {
    let v = 0;
    let bit = 0.5;
    for (let j = i; j > 0; j >>= 1, bit /= 2) if (j & 1) v += bit;
    const k = Math.min(strata - 1, Math.floor(v * strata));
    if (!taken.has(k)) {
      taken.add(k);
      order.push(k);
    }
  }
  return order.map((k) => {
    const a = fromMs + k * stratum + (stratum - width) / 2;
    return { fromMs: a, toMs: a + width };
  });
}

/** A span read for the map. `attributes` (an object, or its JSON text, parsed only when needed) matters only for client and producer spans. */
export interface MapSpan {
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  service_name: string;
  kind: number;
  duration_ms: number;
  status_code: number;
  /** Starts inside a sampled slice (counted); other spans only serve as parents and children. */
  core: boolean;
  attributes: Attrs | string | null;
}

function attrsOf(s: MapSpan): Attrs | null {
  if (typeof s.attributes !== 'string') return s.attributes;
  try {
    const v: unknown = JSON.parse(s.attributes);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Attrs) : null;
  } catch {
    return null;
  }
}

/** Exact entry-span counts of an instrumented service in the window (after filters). */
export interface ServiceCounts {
  service_name: string;
  request_count: number;
  error_count: number;
}

export interface MapFilter {
  /** Keep the service and its direct neighbours only. */
  serviceName?: string;
  /** Only spans lasting at least this long count. */
  minDurationMs?: number;
  status?: 'ok' | 'error';
}

export interface MapLookups {
  /** Service of the parent span of each span, whose parent was not read with the sample (null when it was never received); in order. */
  parentServices?(spans: MapSpan[]): Promise<(string | null)[]>;
  /** Services of the child spans of each producer span (consumers) that were not read with the sample; in order. */
  childServices?(spans: MapSpan[]): Promise<string[][]>;
}

export interface MapNode {
  service_name: string;
  kinds: NodeKind[];
  request_count: number;
  error_count: number;
  error_rate: number;
  p50_ms: number | null;
  p95_ms: number | null;
  throughput_per_min: number;
}

export interface MapEdge {
  source: string;
  target: string;
  call_count: number;
  error_count: number;
  error_rate: number;
  p50_ms: number | null;
  p95_ms: number | null;
}

export interface ServiceMap {
  nodes: MapNode[];
  edges: MapEdge[];
  nodes_truncated: boolean;
  edges_truncated: boolean;
}

export interface ServiceMapInput {
  windowMs: number;
  /** Instrumented services with their exact entry-span counts. */
  services: ServiceCounts[];
  spans: MapSpan[];
  /** Share of the window the core spans cover (1 = all of it: counts are exact). */
  sampleFraction: number;
  filter: MapFilter;
  serviceLimit: number;
  callLimit: number;
  lookups?: MapLookups;
  /** Most out-of-sample look-ups (parents and consumers together; default 400). */
  lookupBudget?: number;
}

interface Acc {
  n: number;
  errors: number;
  durations: number[];
}
const acc = (): Acc => ({ n: 0, errors: 0, durations: [] });

/** Sampled calls of an edge, by the span that judges them: the callee's entry span, or the caller's client span. */
interface EdgeAcc extends Acc {
  byCallee: number;
  byCalleeErrors: number;
}

function passes(s: MapSpan, f: MapFilter): boolean {
  if (f.minDurationMs !== undefined && !(s.duration_ms >= f.minDurationMs)) return false;
  if (f.status === 'error' && s.status_code !== STATUS_ERROR) return false;
  if (f.status === 'ok' && s.status_code === STATUS_ERROR) return false;
  return true;
}

function pcts(durations: number[]): { p50: number | null; p95: number | null } {
  if (!durations.length) return { p50: null, p95: null };
  const d = Float64Array.from(durations);
  return { p50: roundMs(selectPercentile(d, 0.5)!), p95: roundMs(selectPercentile(d, 0.95)!) };
}

const isEntry = (s: MapSpan) => s.kind === SPAN_KIND.server || s.kind === SPAN_KIND.consumer || s.parent_span_id === null;

export async function buildServiceMap(input: ServiceMapInput): Promise<ServiceMap> {
  const { filter } = input;
  const scale = input.sampleFraction >= 1 ? 1 : 1 / input.sampleFraction;
  const budget = input.lookupBudget ?? 400;
  const instrumented = new Set(input.services.map((s) => s.service_name));

  // Span ids are random 64-bit values: keyed by span id alone, checked against the trace id.
  const byId = new Map<string, MapSpan>();
  for (const s of input.spans) byId.set(s.span_id, s);
  const parentOf = (s: MapSpan): MapSpan | undefined => {
    const p = s.parent_span_id === null ? undefined : byId.get(s.parent_span_id);
    return p && p.trace_id === s.trace_id ? p : undefined;
  };
  /** Span ids with a child span of another service among the spans read. */
  const answered = new Set<string>();
  for (const s of input.spans) {
    const p = parentOf(s);
    if (p && p.service_name !== s.service_name) answered.add(p.span_id);
  }

  const edges: { source: string; target: string; acc: EdgeAcc }[] = [];
  const edgeIndex = new Map<string, Map<string, { source: string; target: string; acc: EdgeAcc }>>();
  const virtualKinds = new Map<string, Set<NodeKind>>();
  const entryDurations = new Map<string, number[]>();
  /**
   * Adds one call (or `weight` calls, for a span standing in for others) judged by span `s`: the
   * callee's span (`byCallee`) or the caller's client span.
   */
  const addEdge = (source: string, target: string, s: MapSpan, weight: number, byCallee: boolean) => {
    let bySource = edgeIndex.get(source);
    if (!bySource) edgeIndex.set(source, (bySource = new Map()));
    let e = bySource.get(target);
    if (!e) {
      bySource.set(target, (e = { source, target, acc: { ...acc(), byCallee: 0, byCalleeErrors: 0 } }));
      edges.push(e);
    }
    const failed = s.status_code === STATUS_ERROR;
    e.acc.n += weight;
    if (failed) e.acc.errors += weight;
    if (byCallee) {
      e.acc.byCallee += weight;
      if (failed) e.acc.byCalleeErrors += weight;
    }
    e.acc.durations.push(s.duration_ms);
  };
  const addPeerEdge = (s: MapSpan, weight = 1) => {
    const attrs = attrsOf(s);
    const target = attrs ? peerTargetOf(attrs) : null;
    if (!target || target.name === s.service_name) return;
    if (!instrumented.has(target.name)) {
      let kinds = virtualKinds.get(target.name);
      if (!kinds) virtualKinds.set(target.name, (kinds = new Set()));
      kinds.add(target.kind);
    }
    addEdge(s.service_name, target.name, s, weight, false);
  };

  // Spans whose partner was not read: entry spans with a parent elsewhere, producers without a
  // consumer among the spans read (consumers may start long after the message was produced).
  const orphans: MapSpan[] = [];
  const producers: MapSpan[] = [];
  for (const s of input.spans) {
    if (!s.core || !passes(s, filter)) continue;
    if (isEntry(s) && instrumented.has(s.service_name)) {
      let d = entryDurations.get(s.service_name);
      if (!d) entryDurations.set(s.service_name, (d = []));
      d.push(s.duration_ms);
    }
    // 1. a parent in another service
    if (s.parent_span_id !== null) {
      const parent = parentOf(s);
      if (parent) {
        if (parent.service_name !== s.service_name) addEdge(parent.service_name, s.service_name, s, 1, true);
      } else if (isEntry(s)) orphans.push(s);
    }
    // 2. an outgoing call that no instrumented service answered
    if ((s.kind === SPAN_KIND.client || s.kind === SPAN_KIND.producer) && !answered.has(s.span_id)) {
      if (s.kind === SPAN_KIND.producer) producers.push(s);
      else addPeerEdge(s);
    }
  }

  // Look the missing partners up, within a budget: each group (same service, or same producer and
  // destination) is resolved on evenly spread members, each standing in for group size / resolved.
  /** Evenly spread members of each group, each standing in for group size / resolved (in group order). */
  const pickFromGroups = (spans: MapSpan[], keyOf: (s: MapSpan) => string, share: number): { s: MapSpan; w: number }[] => {
    const groups = new Map<string, MapSpan[]>();
    for (const s of spans) {
      const k = keyOf(s);
      let g = groups.get(k);
      if (!g) groups.set(k, (g = []));
      g.push(s);
    }
    const picked: { s: MapSpan; w: number }[] = [];
    for (const g of groups.values()) {
      const k = Math.max(1, Math.min(g.length, Math.floor((share * g.length) / spans.length)));
      for (let i = 0; i < k; i++) picked.push({ s: g[Math.floor((i * g.length) / k)]!, w: g.length / k });
    }
    return picked;
  };
  const lookups = input.lookups;
  const half = Math.max(1, Math.floor(budget / 2));
  if (lookups?.parentServices) {
    const picked = pickFromGroups(orphans, (s) => s.service_name, half);
    const services = picked.length ? await lookups.parentServices(picked.map((p) => p.s)) : [];
    picked.forEach(({ s, w }, i) => {
      const svc = services[i] ?? null;
      if (svc !== null && svc !== s.service_name) addEdge(svc, s.service_name, s, w, true);
    });
  }
  if (lookups?.childServices) {
    const picked = pickFromGroups(producers, (s) => `${s.service_name}\u0000${peerTargetOf(attrsOf(s) ?? {})?.name ?? ''}`, half);
    const children = picked.length ? await lookups.childServices(picked.map((p) => p.s)) : [];
    picked.forEach(({ s, w }, i) => {
      if (!(children[i] ?? []).some((svc) => svc !== s.service_name)) addPeerEdge(s, w);
    });
  } else {
    for (const s of producers) addPeerEdge(s);
  }

  // Nodes: instrumented services (exact counts), then callees seen only through attributes.
  const minutes = input.windowMs / 60_000;
  // four significant digits: low-volume services keep a meaningful rate
  const perMin = (n: number) => (minutes > 0 && n > 0 ? Number((n / minutes).toPrecision(4)) : 0);
  const nodes = new Map<string, MapNode>();
  for (const svc of input.services) {
    const { p50, p95 } = pcts(entryDurations.get(svc.service_name) ?? []);
    nodes.set(svc.service_name, {
      service_name: svc.service_name,
      kinds: ['service'],
      request_count: svc.request_count,
      error_count: svc.error_count,
      error_rate: errorRate(svc.error_count, svc.request_count),
      p50_ms: p50,
      p95_ms: p95,
      throughput_per_min: perMin(svc.request_count),
    });
  }
  // Scaling sampled calls up. A call judged by the callee's entry span scales with the callee's
  // exact entry count over its sampled entry spans, one judged by the caller's client span with the
  // caller's (ratio estimates: far steadier than dividing by the sampled share of the window, since
  // calls move with requests); without sampled entry spans to compare with, by the sampled share.
  const exactEntries = new Map(input.services.map((s) => [s.service_name, s.request_count]));
  const factor = (service: string) => {
    if (scale === 1) return 1;
    const sampled = entryDurations.get(service)?.length ?? 0;
    const exact = exactEntries.get(service);
    return sampled > 0 && exact !== undefined ? exact / sampled : scale;
  };
  const incoming = new Map<string, Acc>();
  const edgeList: MapEdge[] = [];
  for (const e of edges) {
    if (!nodes.has(e.source) && !virtualKinds.has(e.source)) {
      // A caller with no entry spans of its own (e.g. only client spans): a service with no requests.
      nodes.set(e.source, { service_name: e.source, kinds: ['service'], request_count: 0, error_count: 0, error_rate: 0, p50_ms: null, p95_ms: null, throughput_per_min: 0 });
    }
    const fCallee = factor(e.target);
    const fCaller = factor(e.source);
    const calls = e.acc.byCallee * fCallee + (e.acc.n - e.acc.byCallee) * fCaller;
    const errs = e.acc.byCalleeErrors * fCallee + (e.acc.errors - e.acc.byCalleeErrors) * fCaller;
    if (virtualKinds.has(e.target)) {
      let a = incoming.get(e.target);
      if (!a) incoming.set(e.target, (a = acc()));
      a.n += calls;
      a.errors += errs;
      for (const d of e.acc.durations) a.durations.push(d);
    } else if (!nodes.has(e.target)) {
      nodes.set(e.target, { service_name: e.target, kinds: ['service'], request_count: 0, error_count: 0, error_rate: 0, p50_ms: null, p95_ms: null, throughput_per_min: 0 });
    }
    const { p50, p95 } = pcts(e.acc.durations);
    edgeList.push({ source: e.source, target: e.target, call_count: Math.round(calls), error_count: Math.round(errs), error_rate: errorRate(e.acc.errors, e.acc.n), p50_ms: p50, p95_ms: p95 });
  }
  for (const [name, kinds] of virtualKinds) {
    const a = incoming.get(name) ?? acc();
    const { p50, p95 } = pcts(a.durations);
    const calls = Math.round(a.n);
    nodes.set(name, {
      service_name: name,
      kinds: [...kinds].sort(),
      request_count: calls,
      error_count: Math.round(a.errors),
      error_rate: errorRate(a.errors, a.n),
      p50_ms: p50,
      p95_ms: p95,
      throughput_per_min: perMin(calls),
    });
  }

  // The service filter keeps the service, its edges and their other ends.
  let keptEdges = edgeList;
  let keptNodes = [...nodes.values()];
  if (filter.serviceName !== undefined) {
    const s = filter.serviceName;
    keptEdges = edgeList.filter((e) => e.source === s || e.target === s);
    const names = new Set([s, ...keptEdges.flatMap((e) => [e.source, e.target])]);
    keptNodes = keptNodes.filter((n) => names.has(n.service_name));
  }
  keptNodes = keptNodes.filter((n) => n.request_count > 0 || keptEdges.some((e) => e.source === n.service_name || e.target === n.service_name));

  const byName = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
  keptNodes.sort((a, b) => b.request_count - a.request_count || byName(a.service_name, b.service_name));
  const nodesTruncated = keptNodes.length > input.serviceLimit;
  keptNodes = keptNodes.slice(0, input.serviceLimit);
  const names = new Set(keptNodes.map((n) => n.service_name));
  const visible = keptEdges.filter((e) => names.has(e.source) && names.has(e.target));
  visible.sort((a, b) => b.call_count - a.call_count || byName(a.source, b.source) || byName(a.target, b.target));
  const edgesTruncated = visible.length > input.callLimit || visible.length < keptEdges.length;
  return { nodes: keptNodes, edges: visible.slice(0, input.callLimit), nodes_truncated: nodesTruncated, edges_truncated: edgesTruncated };
}
