import type { Db } from './db.js';
import type { TelemetryWriter } from './telemetry-store.js';
import type { SpanRecord } from '../domain/telemetry-types.js';
import { environmentOf, serviceVersionOf } from './sqlite-telemetry-store.js';
import { wellFormed } from './clickhouse/span-rows.js';
import { addValue, encodeSketch, mergeEncoded, mergeInto, newSketch, type Sketch } from '../domain/releases/sketch.js';
import { SILENCE_MS } from '../domain/releases/serving.js';

/** Requests are entry spans: server and consumer spans, and root spans (as in the trace indexes, migration 005). */
export const isRequest = (sp: Pick<SpanRecord, 'kind' | 'parent_span_id'>): boolean => sp.kind === 2 || sp.kind === 5 || !sp.parent_span_id;

const UNITS = [
  { table: 'release_rollup_1m', ms: 60_000 },
  { table: 'release_rollup_1h', ms: 3_600_000 },
] as const;

interface Cell {
  service: string;
  environment: string;
  version: string;
  t: number;
  spans: number;
  requests: number;
  errors: number;
  sketch: Sketch;
}

/** One rollup cell of a span batch: a service, environment and version's counts in one minute or hour. */
export type ReleaseCell = Cell;

/** What one span batch adds to the release rollups: its minute and hour cells, and its clusters of span times per version. */
export interface ReleaseBatch {
  minutes: Cell[];
  hours: Cell[];
  /** Span times of one service, environment and (non-empty) version with no gap of SILENCE_MS or more inside. */
  clusters: Array<{ service: string; environment: string; version: string; start: number; end: number }>;
}

/** Aggregates a span batch into rollup cells and activity clusters (in memory; the stores merge them into what they hold). */
export function releaseBatch(spans: SpanRecord[]): ReleaseBatch {
  // Spans of a batch share resource objects: read service, environment and version once per resource.
  const groups = new Map<object, { svc: string; env: string; ver: string; minutes: Map<number, Cell>; ts: number[] }>();
  for (const sp of spans) {
    if (!sp.service_name) continue;
    let g = groups.get(sp.resource);
    // Lone surrogates (OTLP/JSON can carry them) as three U+FFFD, what SQLite reads back for them: the
    // stored names then match what a read binds (and ClickHouse 18.16 refuses them in an insert).
    if (!g) groups.set(sp.resource, (g = { svc: wellFormed(sp.service_name), env: wellFormed(environmentOf(sp.resource)), ver: wellFormed(serviceVersionOf(sp.resource)), minutes: new Map(), ts: [] }));
    if (g.svc !== sp.service_name) {
      // The same resource with another service name (Sentry tags): its own group.
      const key = { resource: sp.resource, svc: sp.service_name };
      groups.set(key, (g = { svc: wellFormed(sp.service_name), env: g.env, ver: g.ver, minutes: new Map(), ts: [] }));
    }
    const t = Math.floor(sp.start_ms / 60_000) * 60_000;
    let c = g.minutes.get(t);
    if (!c) g.minutes.set(t, (c = { service: g.svc, environment: g.env, version: g.ver, t, spans: 0, requests: 0, errors: 0, sketch: newSketch() }));
    c.spans++;
    if (isRequest(sp)) {
      c.requests++;
      if (sp.status_code === 2) c.errors++;
      addValue(c.sketch, Math.max(0, sp.end_ms - sp.start_ms));
    }
    if (g.ver) g.ts.push(sp.start_ms);
  }
  // Merge groups of the same service/environment/version, then roll minutes up into hours.
  const minutes = new Map<string, Cell>();
  const hours = new Map<string, Cell>();
  const times = new Map<string, { svc: string; env: string; ver: string; ts: number[] }>();
  for (const g of groups.values()) {
    const k = `${g.svc}\u0000${g.env}\u0000${g.ver}`;
    for (const c of g.minutes.values()) {
      for (const [map, unit] of [[minutes, 60_000], [hours, 3_600_000]] as const) {
        const t = Math.floor(c.t / unit) * unit;
        const key = `${k}\u0000${t}`;
        const into = map.get(key);
        if (!into) map.set(key, { ...c, t, sketch: unit === 60_000 ? c.sketch : mergeInto(newSketch(), c.sketch) });
        else {
          into.spans += c.spans;
          into.requests += c.requests;
          into.errors += c.errors;
          mergeInto(into.sketch, c.sketch);
        }
      }
    }
    if (g.ver) {
      const e = times.get(k);
      if (e) e.ts.push(...g.ts);
      else times.set(k, { svc: g.svc, env: g.env, ver: g.ver, ts: g.ts });
    }
  }
  const clusters: ReleaseBatch['clusters'] = [];
  for (const e of times.values()) {
    e.ts.sort((x, y) => x - y);
    let a = e.ts[0]!;
    let b = a;
    for (const t of e.ts) {
      if (t - b >= SILENCE_MS) {
        clusters.push({ service: e.svc, environment: e.env, version: e.ver, start: a, end: b });
        a = t;
      }
      b = t;
    }
    clusters.push({ service: e.svc, environment: e.env, version: e.ver, start: a, end: b });
  }
  return { minutes: [...minutes.values()], hours: [...hours.values()], clusters };
}

/** Where the release rollups go instead of SQLite (ClickHouse, clickhouse/release-store.ts): rows held with the batch's spans. */
export interface ReleaseRollupSink {
  add(projectId: string, batch: ReleaseBatch): void;
}

/**
 * Wraps a telemetry writer so every span batch also updates the release rollups and activity
 * segments (migration 014) in the same transaction: per-minute and per-hour request/error counts and
 * latency sketches by service, environment and version, aggregated in memory from the batch and
 * merged into the stored rows with one upsert per cell. The writer's own span insert is untouched.
 * With a `sink` (spans in ClickHouse) the batch's cells and clusters go there instead, with the
 * spans: every process then reads every process's release health.
 */
export function withReleaseRollups(db: Db, writer: TelemetryWriter, sink?: ReleaseRollupSink): TelemetryWriter {
  if (sink) {
    return {
      ...writer,
      insertSpans(...args) {
        const n = writer.insertSpans(...args);
        if (n > 0) sink.add(args[0], releaseBatch(args[1]));
        return n;
      },
    };
  }
  db.function('release_sketch_merge', { deterministic: true }, (a: unknown, b: unknown) => mergeEncoded(a as string | null, b as string | null));
  const upserts = UNITS.map((u) =>
    db.prepare(`INSERT INTO ${u.table} (project_id, service_name, environment, t, version, spans, requests, errors, sketch)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
      ON CONFLICT DO UPDATE SET spans = spans + excluded.spans, requests = requests + excluded.requests, errors = errors + excluded.errors,
        sketch = release_sketch_merge(sketch, excluded.sketch)`),
  );
  const near = db.prepare(`SELECT start_ms, end_ms, approx FROM release_activity
    WHERE project_id = ? AND service_name = ? AND environment = ? AND version = ? AND start_ms < ? ORDER BY start_ms DESC`);
  const del = db.prepare('DELETE FROM release_activity WHERE project_id = ? AND service_name = ? AND environment = ? AND version = ? AND start_ms = ?');
  const ins = db.prepare('INSERT INTO release_activity (project_id, service_name, environment, version, start_ms, end_ms, approx) VALUES (?, ?, ?, ?, ?, ?, ?)');

  /** Merge one cluster [a, b] of span times into the stored segments (gaps under SILENCE_MS join). */
  function addActivity(pid: number, svc: string, env: string, ver: string, a: number, b: number): void {
    const hit: Array<{ start_ms: number; end_ms: number; approx: number }> = [];
    // Segments do not overlap, so walking back by start also walks back by end: stop at the first one too far back.
    for (const r of near.iterate(pid, svc, env, ver, b + SILENCE_MS) as IterableIterator<{ start_ms: number; end_ms: number; approx: number }>) {
      if (r.end_ms <= a - SILENCE_MS) break;
      hit.push(r);
    }
    let start = a;
    let end = b;
    let approx = 0;
    for (const r of hit) {
      del.run(pid, svc, env, ver, r.start_ms);
      if (r.start_ms < start || (r.start_ms === start && r.approx)) {
        start = r.start_ms;
        approx = r.approx;
      }
      end = Math.max(end, r.end_ms);
    }
    ins.run(pid, svc, env, ver, start, end, approx);
  }

  function rollUp(projectId: string, spans: SpanRecord[]): void {
    const pid = Number(projectId);
    const b = releaseBatch(spans);
    [b.minutes, b.hours].forEach((cells, i) => {
      for (const c of cells) upserts[i]!.run(pid, c.service, c.environment, c.t, c.version, c.spans, c.requests, c.errors, encodeSketch(c.sketch));
    });
    for (const c of b.clusters) addActivity(pid, c.service, c.environment, c.version, c.start, c.end);
  }

  const insertSpans = db.transaction((...args: Parameters<TelemetryWriter['insertSpans']>) => {
    const n = writer.insertSpans(...args);
    if (n > 0) rollUp(args[0], args[1]);
    return n;
  });
  return {
    // IMMEDIATE: the write lock is taken before the stored cells are read and merged.
    insertSpans: (...a) => insertSpans.immediate(...a),
    insertLogs: (...a) => writer.insertLogs(...a),
    insertMetricPoints: (...a) => writer.insertMetricPoints(...a),
  };
}
