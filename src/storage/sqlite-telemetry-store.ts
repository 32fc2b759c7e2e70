import { createHash } from 'node:crypto';
import type { Db } from './db.js';
import type { Attributes, LogRecordOut, MetricPointRecord, SpanRecord } from '../domain/telemetry-types.js';
import { normalizeOperation } from '../domain/traces/operations.js';
import type { TelemetryWriter } from './telemetry-store.js';
import { catalogUpsert, runsUpsert } from './migrations/008-metric-catalog.js';
import { createAttrEncoder, createLogAttrEncoder, createScopeIds, createValueSets } from './attr-keysets.js';
import { DERIVED, SEVERITY_TEXTS, idBlob } from './compact-ids.js';
import { ftsAttrsText } from './log-fts.js';
import { createMetricRollupWriter } from './metric-rollups.js';

/** `deployment.environment.name` (semconv ≥ 1.27) or the older `deployment.environment`. */
export function environmentOf(resource: Attributes): string {
  const v = resource['deployment.environment.name'] ?? resource['deployment.environment'];
  return typeof v === 'string' ? v : '';
}

export function serviceVersionOf(resource: Attributes): string {
  const v = resource['service.version'];
  return typeof v === 'string' ? v : '';
}

/** OTLP severity number → level name (OpenTelemetry log data model ranges). */
export function levelOf(severityNumber: number, severityText: string): string {
  if (severityNumber >= 21) return 'fatal';
  if (severityNumber >= 17) return 'error';
  if (severityNumber >= 13) return 'warn';
  if (severityNumber >= 9) return 'info';
  if (severityNumber >= 5) return 'debug';
  if (severityNumber >= 1) return 'trace';
  const t = severityText.toLowerCase();
  if (t.startsWith('fatal') || t === 'critical' || t === 'crit' || t === 'emerg' || t === 'alert') return 'fatal';
  if (t.startsWith('err')) return 'error';
  if (t.startsWith('warn')) return 'warn';
  if (t.startsWith('debug')) return 'debug';
  if (t.startsWith('trace')) return 'trace';
  return 'info';
}

/** A span's drill-down operation: the route when HTTP semantics give one, else its normalized name. */
export function operationOf(span: Pick<SpanRecord, 'name' | 'attributes'>): string {
  const a = span.attributes;
  const method = (a['http.request.method'] ?? a['http.method']) as string | undefined;
  const route = (a['http.route'] ?? undefined) as string | undefined;
  if (typeof method === 'string' && typeof route === 'string' && route) return normalizeOperation(`${method} ${route}`);
  if (typeof method === 'string' && span.name.toUpperCase() === method.toUpperCase()) {
    const target = (a['url.path'] ?? a['http.target']) as string | undefined;
    if (typeof target === 'string') return normalizeOperation(`${method} ${target}`);
  }
  return normalizeOperation(span.name);
}



/** Rows per multi-row INSERT: fewer statement executions, still far below SQLite's variable limit. */
const ROWS_PER_INSERT = 32;

const SPAN_COLS = `project_id, trace_id, span_id, parent_span_id, name, operation, kind, service_name, environment, service_version,
  start_ms, end_ms, duration_ms, status_code, status_message, attributes, events, links, resource_id, scope_name, scope_version, trace_state, source, received_ms, attr_keys, scope_id`;
// Migration 052: the dimension and scope name columns of rows from before migration 037 are gone (dims, scope_id).
const LOG_COLS = 'project_id, time_ms, observed_ms, severity_number, severity_text, body, attributes, trace_id, span_id, resource_id, attr_keys, scope_id, dims, attr_tmpl';
const CHUNK_COLS = 'project_id, trace_id, first_rowid, last_rowid, span_count, error_count, min_start_ms, max_start_ms, max_end_ms';

const placeholders = (cols: number, rows: number) => {
  const one = `(${new Array(cols).fill('?').join(', ')})`;
  return new Array(rows).fill(one).join(', ');
};

/**
 * `INSERT … VALUES (…), (…), …` with up to ROWS_PER_INSERT rows per execution, one prepared statement
 * per row count (prepared on first use). `run(args, rows)` takes the flat argument array.
 */
function multiInsert(db: Db, head: string, cols: number) {
  const stmts = new Map<number, ReturnType<Db['prepare']>>();
  return (args: unknown[], rows: number) => {
    let st = stmts.get(rows);
    if (!st) {
      st = db.prepare(`${head} VALUES ${placeholders(cols, rows)}`);
      stmts.set(rows, st);
    }
    return st.run(args);
  };
}

interface ResourceInfo {
  id: number;
  environment: string;
  serviceVersion: string;
}

export function createSqliteTelemetryWriter(db: Db): TelemetryWriter & { resourceId(projectId: string, attrs: Attributes): number } {
  const resourceIds = new Map<string, number>();
  // Attribute keys stored once per key set (migration 037): rows hold the values only.
  const encodeAttrs = createAttrEncoder(db);
  // Log attribute values shared by many records stored once (migration 051).
  const encodeLogAttrs = createLogAttrEncoder(db);
  // Span value lists that repeat stored once (migration 045): the row holds the list's id.
  const valueSet = createValueSets(db);
  // Scopes stored once, ids as bytes, received_ms not kept (migration 037).
  const scopeId = createScopeIds(db);
  // A log row's dimension combination, numbered per project (migration 037: logs_time holds the number).
  const dimsGet = db.prepare(`SELECT id FROM log_dims WHERE project_id = ? AND level = ? AND service_name = ? AND environment = ?
    AND release = ? AND source = ? AND connector_key = ?`).pluck();
  const dimsInsert = db.prepare('INSERT INTO log_dims (project_id, level, service_name, environment, release, source, connector_key) VALUES (?, ?, ?, ?, ?, ?, ?)');
  const dimIds = new Map<string, number>();
  const dimsId = (pid: number, level: string, service: string, env: string, release: string, source: string, connector: string): number => {
    const key = `${pid}\u0000${level}\u0000${service}\u0000${env}\u0000${release}\u0000${source}\u0000${connector}`;
    let id = dimIds.get(key);
    if (id === undefined) {
      const args = [pid, level, service, env, release, source, connector];
      id = (dimsGet.get(...args) as number | undefined) ?? Number(dimsInsert.run(...args).lastInsertRowid);
      if (dimIds.size > 100_000) dimIds.clear();
      dimIds.set(key, id);
    }
    return id;
  };
  const s = {
    resByHash: db.prepare('SELECT id FROM resources WHERE project_id = ? AND hash = ?'),
    resInsert: db.prepare('INSERT INTO resources (project_id, hash, attributes) VALUES (?, ?, ?)'),
    spans: multiInsert(db, `INSERT INTO spans (${SPAN_COLS})`, 26),
    chunks: multiInsert(db, `INSERT INTO trace_chunks (${CHUNK_COLS})`, 9),
    logs: multiInsert(db, `INSERT INTO logs (${LOG_COLS})`, 14),
    fts: multiInsert(db, 'INSERT INTO logs_fts2 (rowid, body, attrs)', 3),
    points: multiInsert(
      db,
      `INSERT INTO metric_points (project_id, metric_name, type, unit, description, temporality, monotonic, service_name, environment,
      series_key, scope_name, start_ms, time_ms, value, count, sum, min, max, buckets, attributes, resource_id, flags, received_ms, exemplars)`,
      24,
    ),
    catalog: db.prepare(catalogUpsert('rowid >= ?')),
    catalogRuns: db.prepare(runsUpsert('rowid >= ?')),
  };

  const rollups = createMetricRollupWriter(db);

  // Resources repeat across every record of a batch and across batches: hash the same object once.
  let lastObj: Attributes | null = null;
  let lastKey = '';
  let lastId = 0;
  function resourceId(projectId: string, attrs: Attributes): number {
    if (attrs === lastObj && lastKey.startsWith(projectId + ':')) return lastId;
    const json = JSON.stringify(attrs);
    const hash = createHash('sha1').update(json).digest('base64url');
    const key = `${projectId}:${hash}`;
    let id = resourceIds.get(key);
    if (id === undefined) {
      const row = s.resByHash.get(Number(projectId), hash) as { id: number } | undefined;
      id = row ? row.id : Number(s.resInsert.run(Number(projectId), hash, json).lastInsertRowid);
      if (resourceIds.size > 50_000) resourceIds.clear();
      resourceIds.set(key, id);
    }
    lastObj = attrs;
    lastKey = key;
    lastId = id;
    return id;
  }

  /** Id, environment and version of a record's resource, computed once per resource object of a batch. */
  function resourceInfo(projectId: string, attrs: Attributes, seen: Map<Attributes, ResourceInfo>): ResourceInfo {
    let r = seen.get(attrs);
    if (!r) {
      r = { id: resourceId(projectId, attrs), environment: environmentOf(attrs), serviceVersion: serviceVersionOf(attrs) };
      seen.set(attrs, r);
    }
    return r;
  }

  /**
   * Spans grouped by trace (first-seen order), inserted ROWS_PER_INSERT at a time so that each
   * trace's spans of the batch take consecutive rowids; then one trace_chunks row per run of
   * consecutive rowids of a trace (migration 007).
   */
  const insertSpans = db.transaction((projectId: string, spans: SpanRecord[], source: string, receivedMs: number) => {
    const pid = Number(projectId);
    const byTrace = new Map<string, SpanRecord[]>();
    for (const sp of spans) {
      const g = byTrace.get(sp.trace_id);
      if (g) g.push(sp);
      else byTrace.set(sp.trace_id, [sp]);
    }
    const ordered: SpanRecord[] = byTrace.size === spans.length ? spans : [];
    if (byTrace.size !== spans.length) for (const g of byTrace.values()) for (const sp of g) ordered.push(sp);
    const rowids = new Float64Array(ordered.length);
    const resources = new Map<Attributes, ResourceInfo>();
    let args: unknown[] = [];
    let rows = 0;
    let firstOfStmt = 0;
    const flush = () => {
      const last = Number(s.spans(args, rows).lastInsertRowid);
      for (let k = 0; k < rows; k++) rowids[firstOfStmt + k] = last - rows + 1 + k;
      firstOfStmt += rows;
      args = [];
      rows = 0;
    };
    for (const sp of ordered) {
      const res = resourceInfo(projectId, sp.resource, resources);
      const [attrKeys, attrs] = encodeAttrs(sp.attributes);
      const operation = operationOf(sp);
      const duration = Math.max(0, sp.end_ms - sp.start_ms);
      // Migration 044: a name equal to the operation, an end equal to start + duration and the
      // resource's service version are not repeated on the row (an empty blob says "derive it").
      args.push(
        pid, idBlob(sp.trace_id, 32), idBlob(sp.span_id, 16), idBlob(sp.parent_span_id, 16), sp.name === operation ? DERIVED : sp.name, operation, sp.kind,
        sp.service_name, res.environment, DERIVED, sp.start_ms, sp.start_ms + duration === sp.end_ms ? DERIVED : sp.end_ms, duration,
        sp.status_code, sp.status_message, attrKeys === null ? attrs : valueSet(attrs),
        sp.events.length ? JSON.stringify(sp.events) : null, sp.links.length ? JSON.stringify(sp.links) : null,
        res.id, '', '', sp.trace_state, source, 0, attrKeys, scopeId(sp.scope.name, sp.scope.version ?? ''),
      );
      if (++rows === ROWS_PER_INSERT) flush();
    }
    if (rows) flush();

    // One chunk per run of consecutive rowids of one trace (normally one per trace).
    let chunkArgs: unknown[] = [];
    let chunkRows = 0;
    const addChunk = (traceId: string, from: number, to: number) => {
      let errors = 0;
      let minStart = Infinity;
      let maxStart = -Infinity;
      let maxEnd = -Infinity;
      for (let k = from; k <= to; k++) {
        const sp = ordered[k]!;
        if (sp.status_code === 2) errors++;
        if (sp.start_ms < minStart) minStart = sp.start_ms;
        if (sp.start_ms > maxStart) maxStart = sp.start_ms;
        if (sp.end_ms > maxEnd) maxEnd = sp.end_ms;
      }
      chunkArgs.push(pid, idBlob(traceId, 32), rowids[from], rowids[to], to - from + 1, errors, minStart, maxStart, maxEnd);
      if (++chunkRows === ROWS_PER_INSERT) {
        s.chunks(chunkArgs, chunkRows);
        chunkArgs = [];
        chunkRows = 0;
      }
    };
    let runStart = 0;
    for (let k = 1; k <= ordered.length; k++) {
      if (k === ordered.length || ordered[k]!.trace_id !== ordered[runStart]!.trace_id || rowids[k] !== rowids[k - 1]! + 1) {
        addChunk(ordered[runStart]!.trace_id, runStart, k - 1);
        runStart = k;
      }
    }
    if (chunkRows) s.chunks(chunkArgs, chunkRows);
    return spans.length;
  });

  /** Log rows and their full-text rows, ROWS_PER_INSERT per statement; a batch's logs take consecutive ids. */
  const insertLogs = db.transaction(
    (projectId: string, logs: LogRecordOut[], source: string, receivedMs: number, connectorKey: string | null) => {
      const pid = Number(projectId);
      const resources = new Map<Attributes, ResourceInfo>();
      let args: unknown[] = [];
      let fts: unknown[] = [];
      let rows = 0;
      const flush = () => {
        const last = Number(s.logs(args, rows).lastInsertRowid);
        for (let k = 0; k < rows; k++) fts[k * 3] = last - rows + 1 + k;
        s.fts(fts, rows);
        args = [];
        fts = [];
        rows = 0;
      };
      for (const l of logs) {
        const body = typeof l.body === 'string' ? l.body : l.body === null ? '' : JSON.stringify(l.body);
        const a = encodeLogAttrs(l.attributes);
        const logSource = typeof l.attributes['log.source'] === 'string' ? (l.attributes['log.source'] as string) : source;
        const res = resourceInfo(projectId, l.resource, resources);
        const level = levelOf(l.severity_number, l.severity_text);
        const traceId = idBlob(l.trace_id, 32);
        args.push(
          pid, l.time_ms, l.observed_time_ms === l.time_ms ? DERIVED : l.observed_time_ms, l.severity_number, SEVERITY_TEXTS[l.severity_number] === l.severity_text ? DERIVED : l.severity_text,
          body, a.stored, traceId, idBlob(l.span_id, 16), res.id, a.attrKeys, scopeId(l.scope.name, ''),
          dimsId(pid, level, l.service_name, res.environment, res.serviceVersion, logSource, connectorKey ?? ''), a.attrTmpl,
        );
        // The trace id is a token of the full-text row: a trace's logs are found through this index
        // (logs.search trace_id, traces.get) without a B-tree index of random keys on logs.
        // Derived from the stored values (log-fts.ts ftsAttrsText): expiry deletes the same text.
        fts.push(0, body, ftsAttrsText(a.full, traceId));
        if (++rows === ROWS_PER_INSERT) flush();
      }
      if (rows) flush();
      return logs.length;
    },
  );

  /** Points ROWS_PER_INSERT per statement, then the catalogue rows of the points just written (migration 008). */
  const insertMetricPoints = db.transaction((projectId: string, points: MetricPointRecord[], receivedMs: number) => {
    const pid = Number(projectId);
    const resources = new Map<Attributes, ResourceInfo>();
    let args: unknown[] = [];
    let rows = 0;
    let first = -1;
    const flush = () => {
      const last = Number(s.points(args, rows).lastInsertRowid);
      if (first < 0) first = last - rows + 1;
      args = [];
      rows = 0;
    };
    for (const p of points) {
      const res = resourceInfo(projectId, p.resource, resources);
      const attrs = JSON.stringify(p.attributes);
      const seriesKey = createHash('sha1').update(`${p.metric_name}\u0000${p.type}\u0000${res.id}\u0000${p.scope.name}\u0000${attrs}`).digest('base64url');
      const buckets =
        p.type === 'hist'
          ? JSON.stringify({ bucket_counts: p.bucket_counts ?? [], explicit_bounds: p.explicit_bounds ?? [] })
          : p.type === 'exponential_histogram'
            ? JSON.stringify({ scale: p.scale ?? 0, zero_count: p.zero_count ?? 0, zero_threshold: p.zero_threshold ?? 0, positive: p.positive ?? null, negative: p.negative ?? null })
            : null;
      args.push(
        pid, p.metric_name, p.type, p.unit, p.description, p.temporality, p.monotonic ? 1 : 0, p.service_name, res.environment,
        seriesKey, p.scope.name, p.start_ms, p.time_ms, p.value ?? null, p.count ?? null, p.sum ?? null, p.min ?? null, p.max ?? null,
        buckets, attrs, res.id, p.flags, receivedMs, p.exemplars?.length ? JSON.stringify(p.exemplars) : null,
      );
      if (++rows === ROWS_PER_INSERT) flush();
    }
    if (rows) flush();
    if (first >= 0) {
      s.catalog.run(first);
      s.catalogRuns.run(first);
      rollups.applySince(first); // per-minute rollups (migration 040)
    }
    return points.length;
  });

  return {
    resourceId,
    insertSpans: (projectId, spans, source, receivedMs) => insertSpans(projectId, spans, source, receivedMs),
    insertLogs: (projectId, logs, source, receivedMs, connectorKey = null) => insertLogs(projectId, logs, source, receivedMs, connectorKey),
    insertMetricPoints: (projectId, points, receivedMs) => insertMetricPoints(projectId, points, receivedMs),
  };
}

