/**
 * Issue 20: spans in ClickHouse. Runs in the `clickhouse-18` project (Debian's clickhouse-server
 * 18.16) and the `clickhouse-chdb` project (ClickHouse 26 in-process), never on SQLite alone.
 * - values reach SQL only as literals that round-trip exactly (no injection through a value);
 * - a write batch inserts the spans of the jobs that succeeded, after the SQLite commit, and
 *   acknowledges a job only once its spans are readable; a failing insert fails the jobs;
 * - spans sent with the real OpenTelemetry exporter land in ClickHouse (not SQLite) and read back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanKind } from '@opentelemetry/api';
import { BasicTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { createHttpEngine, lit, type ChEngine } from '../../src/storage/clickhouse/client.js';
import { CH_MIGRATIONS, migrateClickHouse } from '../../src/storage/clickhouse/schema.js';
import { createChSpanStore, spanRow } from '../../src/storage/clickhouse/span-store.js';
import { createWriteBatcher } from '../../src/storage/write-batcher.js';
import type { SpanRecord } from '../../src/domain/telemetry-types.js';
import { dropDatabase } from '../support/clickhouse.js';
import { newChEngine, useChStore } from '../support/clickhouse-store-fixture.js';
import { DAY, describeClickHouseRetention, T0 } from '../support/clickhouse-retention.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

const mode = process.env.SIGHTLINE_TEST_CLICKHOUSE;
const serverUrl = process.env.SIGHTLINE_TEST_CLICKHOUSE_URL;


const span = (i: number, over: Partial<SpanRecord> = {}): SpanRecord => ({
  trace_id: (i + 1).toString(16).padStart(32, '0'),
  span_id: (i + 1).toString(16).padStart(16, '0'),
  parent_span_id: null,
  trace_state: '',
  name: `GET /items/${i}`,
  kind: 2,
  start_ms: 1_767_225_600_000 + i,
  end_ms: 1_767_225_600_000 + i + 5.25,
  status_code: i % 3 === 0 ? 2 : 0,
  status_message: '',
  attributes: { 'http.request.method': 'GET', n: i },
  events: [],
  links: [],
  resource: { 'service.name': 'api', 'deployment.environment.name': 'prod' },
  scope: { name: 'test', version: '1', attributes: {} },
  service_name: 'api',
  ...over,
});

describe.skipIf(mode !== 'server' && mode !== 'chdb')('ClickHouse span store', () => {
  const fx = useChStore();

  it('round-trips hostile strings and numbers as literals, and refuses what is not a value', async () => {
    const values = ["'", '\\', "\\'", "'); DROP TABLE spans; --", 'line\nbreak\r\ttab', 'nul\0byte', 'ünïcødé ✓ 𝄞', '`back`', '', '\\N', 'a\\tb'];
    for (const v of values) {
      const [r] = await fx.engine.query<{ v: string }>(`SELECT ${lit(v)} AS v`);
      expect(r!.v).toBe(v);
    }
    const [n] = await fx.engine.query<{ a: number; b: number }>(`SELECT ${lit(1767225600000.125)} AS a, ${lit(-3)} AS b`);
    expect(n).toEqual({ a: 1767225600000.125, b: -3 });
    // Subnormal numbers (a score filter's max_score=5e-324): 18.16's parser refuses them as literals.
    for (const x of [5e-324, -2.5e-315, 1e-310, 2.2250738585072e-308, 1e-300]) {
      const [r] = await fx.engine.query<{ x: number; below: number }>(`SELECT ${lit(x)} AS x, toFloat64(0) < ${lit(x)} AS below`);
      expect(r).toEqual({ x, below: x > 0 ? 1 : 0 });
    }
    expect(() => lit(Number.NaN)).toThrow();
    // and through an insert (TabSeparated escapes)
    await fx.engine.command('CREATE TABLE IF NOT EXISTS lit_check (i UInt32, v String) ENGINE = MergeTree ORDER BY i');
    await fx.engine.insert('lit_check', values.map((v, i) => ({ i, v })));
    expect((await fx.engine.query<{ v: string }>('SELECT v FROM lit_check ORDER BY i')).map((r) => r.v)).toEqual(values);
    expect(() => lit({ a: 1 })).toThrow();
    expect((await fx.engine.query<{ n: number }>('SELECT count() AS n FROM spans'))[0]!.n).toBe(0);
  });

  it('inserts the spans of the jobs that succeeded, after the commit, before acknowledging them', async () => {
    const store = createChSpanStore(fx.engine);
    const batch = createWriteBatcher(fx.db, 512, [store.participant]);
    const kept = batch(() => store.add('7', [span(1), span(2)], 'otlp', 1));
    const failed = batch(() => {
      store.add('7', [span(3)], 'otlp', 1);
      throw new Error('this job fails after adding its span');
    });
    const alsoKept = batch(() => store.add('7', [span(4)], 'otlp', 1));
    const failedCheck = expect(failed).rejects.toThrow('this job fails');
    await expect(kept).resolves.toBe(2);
    // acknowledged: readable now
    const rows = await fx.engine.query<{ span_id: string }>("SELECT span_id FROM spans WHERE project_id = 7 ORDER BY span_id");
    expect(rows.map((r) => r.span_id)).toEqual([span(1).span_id, span(2).span_id, span(4).span_id]);
    await failedCheck;
    await expect(alsoKept).resolves.toBe(1);
    const chunks = await fx.engine.query<{ trace_id: string; span_count: number; error_count: number }>(
      'SELECT trace_id, span_count, error_count FROM trace_chunks WHERE project_id = 7 ORDER BY trace_id',
    );
    expect(chunks).toEqual([
      { trace_id: span(1).trace_id, span_count: 1, error_count: 0 },
      { trace_id: span(2).trace_id, span_count: 1, error_count: 0 },
      { trace_id: span(4).trace_id, span_count: 1, error_count: 0 },
    ]);
  });

  it('fails every job of a batch whose insert fails, and acknowledges none', async () => {
    const broken: ChEngine = { ...fx.engine, insertLines: async () => Promise.reject(new Error('ClickHouse is down')), close: async () => {} };
    const store = createChSpanStore(broken);
    const batch = createWriteBatcher(fx.db, 512, [store.participant]);
    const a = batch(() => store.add('8', [span(10)], 'otlp', 1));
    const b = batch(() => store.add('8', [span(11)], 'otlp', 1));
    await Promise.all([expect(a).rejects.toThrow('ClickHouse is down'), expect(b).rejects.toThrow('ClickHouse is down')]);
    expect((await fx.engine.query<{ n: number }>('SELECT count() AS n FROM spans WHERE project_id = 8'))[0]!.n).toBe(0);
  });

  it('coalesces batches that wait behind an insert into one insert', async () => {
    let inserts = 0;
    const counting: ChEngine = { ...fx.engine, insertLines: async (t, c, p) => (t === 'spans' && inserts++, fx.engine.insertLines(t, c, p)), close: async () => {} };
    const store = createChSpanStore(counting);
    const batch = createWriteBatcher(fx.db, 1, [store.participant]); // one job per batch: one commit each
    const jobs = [];
    for (let i = 0; i < 20; i++) jobs.push(batch(() => store.add('9', [span(100 + i)], 'otlp', 1)));
    await Promise.all(jobs);
    expect((await fx.engine.query<{ n: number }>('SELECT count() AS n FROM spans WHERE project_id = 9'))[0]!.n).toBe(20);
    expect(inserts).toBeLessThan(20);
  });
});

describe.skipIf(mode !== 'server' && mode !== 'chdb')('entry_spans and entry_minutes (migrations 2 and 3)', () => {
  it('hold every entry span the writer stores, and are filled from the spans stored before them', async () => {
    const engine = newChEngine();
    try {
      // A database at version 1, as the previous release left it, with spans written then.
      await engine.command(`CREATE TABLE IF NOT EXISTS sightline_migrations (version UInt32, name String, applied_ms Float64)
        ENGINE = MergeTree PARTITION BY tuple() ORDER BY version`);
      for (const st of CH_MIGRATIONS[0]!.statements) await engine.command(st);
      await engine.insert('sightline_migrations', [{ version: 1, name: 'spans', applied_ms: 0 }]);
      const child = (i: number) => span(i, { parent_span_id: span(i - 1).span_id, kind: 3 }); // a client span: not an entry
      await engine.insert('spans', [span(1), child(2), span(3)].map((sp) => spanRow(7, sp, 'otlp', 1)));
      expect(await migrateClickHouse(engine)).toBe(CH_MIGRATIONS.length - 1);
      const entries = async () => (await engine.query<{ span_id: string }>('SELECT span_id FROM entry_spans ORDER BY span_id')).map((r) => r.span_id.replace(/^0+/, ''));
      const minutes = async () => {
        const [r] = await engine.query<{ n: number; errors: number; last: number }>(
          'SELECT countMerge(n) AS n, sumMerge(errors) AS errors, maxMerge(last_ms) AS last FROM entry_minutes WHERE project_id = 7',
        );
        const [e] = await engine.query<{ n: number; errors: number; last: number }>(
          'SELECT count() AS n, countIf(status_code = 2) AS errors, max(start_ms) AS last FROM entry_spans WHERE project_id = 7',
        );
        expect({ n: Number(r!.n), errors: Number(r!.errors), last: Number(r!.last) }).toEqual({ n: Number(e!.n), errors: Number(e!.errors), last: Number(e!.last) });
        return Number(r!.n);
      };
      expect(await entries()).toEqual(['2', '4']);
      expect(await minutes()).toBe(2);
      // Applying them again (another process) copies nothing twice.
      for (const st of CH_MIGRATIONS[1]!.statements) await engine.command(st);
      for (const st of CH_MIGRATIONS[2]!.statements) await engine.command(st);
      expect(await entries()).toEqual(['2', '4']);
      expect(await minutes()).toBe(2);
      // From now on the writer adds entry spans itself, and the view counts them.
      const store = createChSpanStore(engine);
      store.add('7', [span(5), child(6)], 'otlp', 1);
      await store.flush();
      expect(await entries()).toEqual(['2', '4', '6']);
      expect(await minutes()).toBe(3);
    } finally {
      if (mode === 'server') await dropDatabase(serverUrl!, (engine as ReturnType<typeof createHttpEngine>).database);
      await engine.close();
    }
  });
});

describe.skipIf(mode !== 'server' && mode !== 'chdb')('spans from the OpenTelemetry exporter go to ClickHouse', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t.close());

  it('stores them in ClickHouse, none in SQLite, and traces.get reads them back', async () => {
    const provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': 'shop' }),
      spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${t.url}/ingest/v1/traces`, headers: { 'x-service-key': t.keys.ingest } }))],
    });
    const tracer = provider.getTracer('t');
    const root = tracer.startSpan('GET /cart', { kind: SpanKind.SERVER, attributes: { 'http.request.method': 'GET', 'http.route': '/cart' } });
    root.end();
    await provider.forceFlush();
    const traceId = root.spanContext().traceId;
    expect((t.s.db.prepare('SELECT count(*) AS n FROM spans').get() as { n: number }).n).toBe(0);
    const ch = t.s.services.clickhouse!;
    const rows = await ch.engine.query<{ trace_id: string; operation: string }>('SELECT trace_id, operation FROM spans');
    expect(rows).toEqual([{ trace_id: traceId, operation: 'GET /cart' }]);
    const r = await api(t, 'GET', `/v1/projects/${t.projectId}/traces/${traceId}`, { key: t.keys.admin });
    expect(r.status).toBe(200);
    expect((r.body as { spans: { name: string }[] }).spans.map((s) => s.name)).toEqual(['GET /cart']);
    await provider.shutdown();
  });
});

/** Span `label` of a retention test: named after its label, with a trace id of its own. */
const aged = (label: string, daysAgo: number) => {
  const i = [...label].reduce((n, ch) => n * 31 + ch.charCodeAt(0), 7) % 100_000;
  return span(i, { name: label, start_ms: T0 - daysAgo * DAY, end_ms: T0 - daysAgo * DAY + 3 });
};

describeClickHouseRetention({
  kind: 'spans',
  rows: 'spans',
  write: (t, pid, rows) => t.s.services.writeBatch(() => t.s.services.telemetry.insertSpans(pid, rows.map((r) => aged(r.label, r.daysAgo)), 'otlp', T0)),
  left: async (engine) => (await engine.query<{ name: string }>('SELECT name FROM spans ORDER BY name')).map((r) => r.name),
  async after(t, engine) {
    const P = t.projectId;
    const O = t.otherProject.projectId;
    // Entry spans and the per-minute counts expire with them.
    const entriesLeft = await engine.query<{ span_id: string }>('SELECT span_id FROM entry_spans ORDER BY span_id');
    expect(entriesLeft.map((r) => r.span_id).sort()).toEqual(['o10', 'o2', 'p2'].map((l) => aged(l, 0).span_id).sort());
    const counted = await engine.query<{ project_id: number; n: number }>('SELECT project_id, countMerge(n) AS n FROM entry_minutes GROUP BY project_id ORDER BY project_id');
    expect(counted.map((r) => `${r.project_id}:${Number(r.n)}`)).toEqual([`${P}:1`, `${O}:2`]);
    const get = (label: string) => api(t, 'GET', `/v1/projects/${P}/traces/${aged(label, 0).trace_id}`, { key: t.keys.admin }).then((r) => r.status);
    expect(await get('p10')).toBe(404);
    expect(await get('p2')).toBe(200);
    const chunks = await engine.query<{ n: number }>(`SELECT count() AS n FROM trace_chunks WHERE project_id = ${Number(P)}`);
    expect(chunks[0]!.n).toBe(1);
  },
});
