import type { Db } from './db.js';
import type { TelemetryWriter } from './telemetry-store.js';
import type { SpanRecord } from '../domain/telemetry-types.js';
import { environmentOf, serviceVersionOf } from './sqlite-telemetry-store.js';
import { addValue, encodeSketch, mergeEncoded, newSketch, type Sketch } from '../domain/releases/sketch.js';
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

/**
 * Wraps a telemetry writer so every span batch also updates the release rollups and activity
 * segments (migration 014) in the same transaction: per-minute and per-hour request/error counts and
 * latency sketches by service, environment and version, aggregated in memory from the batch and
 * merged into the stored rows with one upsert per cell. The writer's own span insert is untouched.
 */
export function withReleaseRollups(db: Db, writer: TelemetryWriter): TelemetryWriter {
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
    const cells = UNITS.map(() => new Map<string, Cell>());
    const times = new Map<string, { svc: string; env: string; ver: string; ts: number[] }>();
    for (const sp of spans) {
      if (!sp.service_name) continue;
      const env = environmentOf(sp.resource);
      const ver = serviceVersionOf(sp.resource);
      const req = isRequest(sp);
      const err = req && sp.status_code === 2;
      const ms = Math.max(0, sp.end_ms - sp.start_ms);
      UNITS.forEach((u, i) => {
        const t = Math.floor(sp.start_ms / u.ms) * u.ms;
        const key = `${sp.service_name}\u0000${env}\u0000${ver}\u0000${t}`;
        let c = cells[i]!.get(key);
        if (!c) cells[i]!.set(key, (c = { service: sp.service_name, environment: env, version: ver, t, spans: 0, requests: 0, errors: 0, sketch: newSketch() }));
        c.spans++;
        if (req) {
          c.requests++;
          if (err) c.errors++;
          addValue(c.sketch, ms);
        }
      });
      if (ver) {
        const k = `${sp.service_name}\u0000${env}\u0000${ver}`;
        let e = times.get(k);
        if (!e) times.set(k, (e = { svc: sp.service_name, env, ver, ts: [] }));
        e.ts.push(sp.start_ms);
      }
    }
    UNITS.forEach((_, i) => {
      for (const c of cells[i]!.values()) {
        upserts[i]!.run(pid, c.service, c.environment, c.t, c.version, c.spans, c.requests, c.errors, encodeSketch(c.sketch));
      }
    });
    for (const e of times.values()) {
      e.ts.sort((x, y) => x - y);
      let a = e.ts[0]!;
      let b = a;
      for (const t of e.ts) {
        if (t - b >= SILENCE_MS) {
          addActivity(pid, e.svc, e.env, e.ver, a, b);
          a = t;
        }
        b = t;
      }
      addActivity(pid, e.svc, e.env, e.ver, a, b);
    }
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
