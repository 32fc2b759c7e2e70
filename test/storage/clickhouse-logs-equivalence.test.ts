/**
 * Issue 20: log reads answer the same on both backends. Random log records (seeded: services,
 * environments, releases, severities by number and by text, equal times, bodies with phrases,
 * hyphenated, dotted and accented words and trace ids, attributes of several types, trace and span
 * ids, sources and connector keys) are written through the same writer into a SQLite-only server and
 * a server with logs in ClickHouse; then logs.search, logs.histogram and logs.insights with random
 * `q` (words, prefixes, phrases, `key:value`, OR, parentheses) and filters, pages and windows must
 * give identical answers (log ids aside: each backend numbers its own). Runs in the ClickHouse test
 * projects (18.16 and chdb).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Attributes, LogRecordOut } from '../../src/domain/telemetry-types.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { rng } from '../../bench/lib.js';

const mode = process.env.SIGHTLINE_TEST_CLICKHOUSE;
const NOW = Date.parse('2026-04-10T12:00:00.000Z');
const HOUR = 3_600_000;
const MIN = 60_000;

const SERVICES = ['web', 'api', 'billing', 'search'];
const ENVS = ['prod', 'staging', undefined];
const HOSTS = ['web-1', 'web-2', 'db-1'];
const WORDS = ['timeout', 'connection', 'reset', 'refused', 'upstream', 'payment', 'declined', 'order', 'café', 'Ärger', 'sku-4242', 'foo.bar', 'retry', 'attempt', 'GET', '/cart', 'user', 'timed'];
const TRACES = Array.from({ length: 12 }, (_, i) => `${(i * 7919).toString(16).padStart(4, '0').slice(-4)}${'ab12cd34ef56'.repeat(3).slice(0, 28)}`);

function makeLogs(r: () => number, n: number): { logs: LogRecordOut[]; connector: string | null }[] {
  const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const batches: { logs: LogRecordOut[]; connector: string | null }[] = [];
  let cur: LogRecordOut[] = [];
  for (let i = 0; i < n; i++) {
    const svc = pick(SERVICES);
    const env = pick(ENVS);
    const resource: Attributes = { 'service.name': svc, 'service.version': `1.${i % 3}`, 'host.name': pick(HOSTS) };
    if (env) resource['deployment.environment.name'] = env;
    // coarse times: many equal times (ties ordered by arrival on both backends)
    const time = NOW - Math.floor(r() * 8) * HOUR - Math.floor(r() * 50) * MIN - (r() < 0.2 ? 0.25 : r() < 0.3 ? Math.floor(r() * 59_000) : 0);
    const words = Array.from({ length: 2 + Math.floor(r() * 6) }, () => pick(WORDS));
    if (r() < 0.05) words.push(pick(TRACES));
    const attributes: Attributes = {};
    if (r() < 0.5) attributes['http.route'] = pick(['/cart', '/orders/{id}', '/health']);
    if (r() < 0.3) attributes[r() < 0.5 ? 'http.request.method' : 'http.method'] = pick(['GET', 'POST']);
    if (r() < 0.3) attributes['user.id'] = pick([42, 7, 1000]);
    if (r() < 0.2) attributes.retry = r() < 0.5;
    if (r() < 0.2) attributes.ratio = pick([1.5, 0.25, 2]);
    if (r() < 0.1) attributes.tags = ['a', 'b'];
    if (r() < 0.1) attributes.user = { tier: pick(['gold', 'silver']) };
    if (r() < 0.1) attributes.note = null;
    if (r() < 0.1) attributes['log.source'] = 'syslog';
    if (r() < 0.15) attributes['customer.tier'] = pick(['gold', 'silver bullet']);
    const sev = pick([0, 1, 5, 9, 9, 9, 13, 17, 17, 21]);
    const traced = r() < 0.4;
    cur.push({
      resource, scope: { name: pick(['app', '']), version: '', attributes: {} }, service_name: svc,
      time_ms: time, observed_time_ms: r() < 0.5 ? time : time + 3, severity_number: sev,
      severity_text: sev ? pick(['', 'ERROR', 'Information']) : pick(['warning', 'ERR', 'critical', '', 'debug']),
      body: r() < 0.05 ? { msg: words.join(' '), code: 7 } : words.join(' '),
      attributes, trace_id: traced ? pick(TRACES) : null, span_id: traced ? pick(['b7ad6b7169203331', '00f067aa0ba902b7']) : null, flags: 0, event_name: '',
    });
    if (cur.length >= 1 + Math.floor(r() * 60)) {
      batches.push({ logs: cur, connector: r() < 0.2 ? pick(['vercel-prod', 'drain-2']) : null });
      cur = [];
    }
  }
  if (cur.length) batches.push({ logs: cur, connector: null });
  return batches;
}

/** A body without its log records' ids (each backend numbers its own records). */
const withoutIds = (v: unknown): unknown => {
  if (Array.isArray(v)) return v.map(withoutIds);
  if (!v || typeof v !== 'object') return v;
  const o = v as Record<string, unknown>;
  const isLog = 'body' in o && 'severity_number' in o;
  return Object.fromEntries(Object.entries(o).filter(([k]) => !(isLog && k === 'id')).map(([k, x]) => [k, withoutIds(x)]));
};

describe.skipIf(mode !== 'server' && mode !== 'chdb')('log reads on SQLite and on ClickHouse', () => {
  let a: TestServer;
  let b: TestServer;
  beforeAll(async () => {
    a = await startTestServer({ now: () => NOW, clickhouse: false });
    b = await startTestServer({ now: () => NOW });
    const batches = makeLogs(rng(31), 1500);
    for (const s of [a, b]) {
      for (const x of batches) await s.s.services.writeBatch(() => s.s.services.telemetry.insertLogs(s.projectId, x.logs, 'otlp', NOW, x.connector));
    }
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  it('keeps log records out of SQLite when they go to ClickHouse', () => {
    expect(a.s.db.prepare('SELECT count(*) FROM logs').pluck().get()).toBe(1500);
    expect(b.s.db.prepare('SELECT count(*) FROM logs').pluck().get()).toBe(0);
    expect(b.s.db.prepare('SELECT count(*) FROM log_counts_1m').pluck().get()).toBe(0);
  });

  it('answer every log read with the same body', async () => {
    const r = rng(9);
    const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
    const iso = (ms: number) => new Date(ms).toISOString();
    const Q = [
      'timeout', 'time*', 'TIMEOUT upstream', '"connection reset"', '"reset connection"', 'cafe', 'Café', 'arger', 'sku-4242', 'sku', '"sku 4242"', 'foo.bar', 'foo',
      'get', '"timed out"', 'retry attempt', 'rese*', '"connection re*"', 'gold', '"silver bullet"', 'tier', TRACES[3]!, TRACES[5]!.toUpperCase(), TRACES[1]!.slice(0, 12),
      'host.name:web-1', 'host.name:web*', 'http.route:/cart', 'user.id:42', 'retry:1', 'retry:0', 'ratio:1.5', 'ratio:0.25', 'user:{"tier":"gold"}', 'level:error',
      'level:WARN', 'service:api', 'service:bil*', 'release:1.2', 'environment:staging', 'source:syslog', `trace_id:${TRACES[2]}`, 'trace_id:00*', 'span_id:b7ad6b7169203331',
      '(timeout OR refused) host.name:web-2', 'payment OR declined', '(café OR sku*) level:info', 'customer.tier:"silver bullet"', 'note:null', 'order -reset', 'http.method:POST',
    ];
    const paths: string[] = [];
    for (let i = 0; i < 160; i++) {
      const to = pick([NOW, NOW - HOUR, NOW - 2 * HOUR + 30_000 + 7]);
      const from = to - pick([8, 5, 2, 1]) * HOUR - pick([0, 0, 17 * MIN, 1234]);
      const q: string[] = [`from=${iso(from)}`, `to=${iso(to)}`];
      if (r() < 0.6) q.push(`q=${encodeURIComponent(pick(Q))}`);
      if (r() < 0.2) q.push(`level=${pick(['error', 'warn,fatal', 'info', 'debug,trace'])}`);
      if (r() < 0.2) q.push(`service=${pick(SERVICES)}`);
      if (r() < 0.1) q.push(`environment=${pick(['prod', 'staging'])}`);
      if (r() < 0.1) q.push(`release=1.${Math.floor(r() * 3)}`);
      if (r() < 0.1) q.push(`source=${pick(['otlp', 'syslog'])}`);
      if (r() < 0.1) q.push(`connector_key=${pick(['vercel-prod', 'drain-2'])}`);
      if (r() < 0.1) q.push(`trace_id=${pick(TRACES)}`);
      if (r() < 0.05) q.push('span_id=00f067aa0ba902b7');
      const kind = pick(['search', 'search', 'histogram', 'insights']);
      if (kind === 'search') {
        q.push(`limit=${pick([1, 5, 20, 100])}`, `offset=${pick([0, 0, 3, 40])}`);
        paths.push(`/logs?${q.join('&')}`);
      } else if (kind === 'histogram') {
        q.push(`step=${pick(['1m', '5m', '15m', '1h'])}`);
        if (r() < 0.7) q.push(`group_by=${pick(['service', 'http_method', 'service_version', 'environment', 'level', 'source'])}`);
        paths.push(`/logs/histogram?${q.join('&')}`);
      } else {
        if (r() < 0.6) q.push(`dimensions=${pick(['http.route', 'user.id,user.tier', 'retry,ratio,tags'])}`);
        paths.push(`/logs/insights?${q.join('&')}`);
      }
    }
    paths.push(`/observability-summary?from=${iso(NOW - 6 * HOUR)}&to=${iso(NOW)}`);
    let compared = 0;
    let nonEmpty = 0;
    for (const p of paths) {
      const x = await api(a, 'GET', `/v1/projects/${a.projectId}${p}`, { key: a.keys.admin });
      const y = await api(b, 'GET', `/v1/projects/${b.projectId}${p}`, { key: b.keys.admin });
      expect(y.status, p).toBe(x.status);
      expect(withoutIds(y.body), p).toEqual(withoutIds(x.body));
      if (x.status === 200) compared++;
      if ((Array.isArray(x.body.data) && x.body.data.length) || x.body.total > 0 || x.body.total_count > 0) nonEmpty++;
    }
    expect(compared).toBe(paths.length);
    expect(nonEmpty).toBeGreaterThan(100);
  });

  it('count, total, page and sample through the readers as SQLite does', async () => {
    const f = { fromMs: NOW - 9 * HOUR, toMs: NOW };
    for (const traceId of TRACES.slice(0, 4)) {
      const tf = { fromMs: 0, toMs: Number.MAX_SAFE_INTEGER, traceId };
      const x = await a.s.services.logsRead.total(a.projectId, tf);
      expect(await b.s.services.logsRead.total(b.projectId, tf)).toBe(x);
      const page = { limit: 7, offset: Math.max(0, x - 7), withTotal: false };
      const rows = async (s: TestServer) => (await s.s.services.logsRead.search(s.projectId, tf, page)).rows.map(({ id: _i, resource_id: _r, ...rest }) => rest);
      expect(await rows(b)).toEqual(await rows(a));
    }
    const counts = async (s: TestServer) =>
      (await s.s.services.logsRead.counts(s.projectId, f, ['connector_key', 'http_method', 'level'], { firstMs: NOW - 9 * HOUR, stepMs: HOUR }))
        .reduce((m, c) => m.set(`${c.bucket}|${c.keys.join('|')}`, (m.get(`${c.bucket}|${c.keys.join('|')}`) ?? 0) + c.n), new Map<string, number>());
    expect(await counts(b)).toEqual(await counts(a));
    expect(await b.s.services.logsRead.newest(b.projectId, f, 300, { attributes: true })).toEqual(await a.s.services.logsRead.newest(a.projectId, f, 300, { attributes: true }));
  });
});
