/**
 * Issue 20: spans reach ClickHouse as TabSeparated text made from the decoded spans (span-rows.ts),
 * on the decode worker for OTLP. Runs in the `clickhouse-18` and `clickhouse-chdb` projects.
 * - the text of a span is its row object's fields in SPAN_COLUMNS order, tab-separated, escaped as
 *   ClickHouse reads them (so the writer made from spans and the one made from row objects store the
 *   same rows);
 * - awkward strings (quotes, backslashes, control characters, U+2028, astral characters, lone
 *   surrogates, byte-order marks) sent over OTLP come back from ClickHouse as SQLite gives them back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ENTRY_COLUMNS, SPAN_COLUMNS, encodeSpans } from '../../src/storage/clickhouse/span-rows.js';
import { entryRow, spanRow } from '../../src/storage/clickhouse/span-store.js';
import type { SpanRecord } from '../../src/domain/telemetry-types.js';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

const mode = process.env.SIGHTLINE_TEST_CLICKHOUSE;

const AWKWARD = [
  'plain',
  'quote " and \\ backslash',
  'nul \u0000 bell \u0007 esc \u001b del \u007f',
  'line\nbreak\r\ttab\f\b',
  'sep \u2028 \u2029',
  'ünïcødé ✓ 𝄞 😀',
  'bom \ufeff',
  'lone high \ud800 end',
  'lone low \udc00',
  'reversed \udc00\ud800',
  '\\N',
  '<script>&amp;</script>',
  '',
];

const span = (i: number, over: Partial<SpanRecord> = {}): SpanRecord => ({
  trace_id: 'ab'.repeat(16),
  span_id: (i + 1).toString(16).padStart(16, '0'),
  parent_span_id: i ? (1).toString(16).padStart(16, '0') : null,
  trace_state: '',
  name: AWKWARD[i % AWKWARD.length]!,
  kind: i ? 3 : 2,
  start_ms: 1_767_225_600_000.5 + i,
  end_ms: 1_767_225_600_000.5 + i + 2.125,
  status_code: i % 4 === 0 ? 2 : 1,
  status_message: AWKWARD[(i + 3) % AWKWARD.length]!,
  attributes: { k: AWKWARD[(i + 1) % AWKWARD.length]!, [AWKWARD[(i + 2) % AWKWARD.length]! + 'key']: i, nested: [1.5, true, 'x\u0001'] },
  events: i % 2 ? [{ name: AWKWARD[i % AWKWARD.length]!, time_ms: 1_767_225_600_001, attributes: { e: '\u0002' } }] : [],
  links: [],
  resource: { 'service.name': `svc ${AWKWARD[(i + 4) % AWKWARD.length]}`, 'deployment.environment.name': 'prod "x"', 'service.version': '1.\u00002' },
  scope: { name: AWKWARD[(i + 5) % AWKWARD.length]!, version: '1', attributes: {} },
  service_name: `svc ${AWKWARD[(i + 4) % AWKWARD.length]}`,
  ...over,
});

/** A TabSeparated field as ClickHouse reads it back (the escapes the encoder writes), for the check below. */
const unescape = (f: string): string => f.replace(/\\(.)/g, (_, c: string) => ({ t: '\t', n: '\n', r: '\r', '0': '\0', '\\': '\\' })[c] ?? `?${c}`);

describe.skipIf(mode !== 'server' && mode !== 'chdb')('span rows as TabSeparated text', () => {
  it('writes each span as its row object\'s fields in column order, one line each, every special character escaped', () => {
    const spans = AWKWARD.map((_, i) => span(i));
    spans.push(span(99, { kind: 5, parent_span_id: 'ff'.repeat(8), start_ms: Number.NaN }));
    const enc = encodeSpans(42, spans, 'otlp', 1_767_225_600_123.25);
    const lines = (u: Uint8Array) => Buffer.from(u).toString('utf8').split('\n');
    const rows = spans.map((sp) => spanRow(42, sp, 'otlp', 1_767_225_600_123.25));
    // A non-finite time is written as the column's default.
    const field = (r: Record<string, unknown>, c: string) => (typeof r[c] === 'number' && !Number.isFinite(r[c]) ? '0' : String(r[c]));
    const check = (text: Uint8Array, want: Record<string, unknown>[], columns: readonly string[]) => {
      const got = lines(text);
      expect(got.pop()).toBe(''); // every line ends with \n
      expect(got).toHaveLength(want.length);
      got.forEach((line, i) => {
        const fields = line.split('\t');
        expect(fields).toHaveLength(columns.length);
        expect(fields.map(unescape)).toEqual(columns.map((c) => field(want[i]!, c)));
      });
    };
    check(enc.spans, rows as unknown as Record<string, unknown>[], SPAN_COLUMNS);
    check(enc.entries, rows.filter((r) => r.is_entry).map(entryRow) as unknown as Record<string, unknown>[], ENTRY_COLUMNS);
    // Every column of the row is written, in the order the INSERT names them.
    expect([...SPAN_COLUMNS].sort()).toEqual(Object.keys(rows[0]!).sort());
    expect([...ENTRY_COLUMNS]).toEqual(Object.keys(entryRow(rows[0]!)));
    expect(enc.count).toBe(spans.length);
  });
});

/** OTLP/JSON carrying the awkward strings (JSON can carry lone surrogates; protobuf strings cannot). */
function otlpJson(): string {
  const now = Date.now();
  const str = (s: string) => ({ stringValue: s });
  const spans = AWKWARD.map((name, i) => ({
    traceId: 'cd'.repeat(16),
    spanId: (i + 1).toString(16).padStart(16, '0'),
    ...(i ? { parentSpanId: (1).toString(16).padStart(16, '0') } : {}),
    name,
    kind: i ? 3 : 2,
    startTimeUnixNano: String((now - 60_000 + i) * 1e6),
    endTimeUnixNano: String((now - 60_000 + i + 3) * 1e6),
    attributes: [
      { key: 'k', value: str(AWKWARD[(i + 1) % AWKWARD.length]!) },
      { key: `${AWKWARD[(i + 2) % AWKWARD.length]}key`, value: { intValue: String(i) } },
    ],
    events: [{ name: AWKWARD[(i + 6) % AWKWARD.length], timeUnixNano: String((now - 60_000 + i + 1) * 1e6), attributes: [{ key: 'e', value: str(AWKWARD[(i + 7) % AWKWARD.length]!) }] }],
    status: { code: i % 3 === 0 ? 2 : 1, message: AWKWARD[(i + 3) % AWKWARD.length] },
  }));
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: [{ key: 'service.name', value: str('svc \u2028 "q" \ud800') }, { key: 'deployment.environment.name', value: str('env\u0001') }, { key: 'service.version', value: str('1.0 \udc00') }] },
        scopeSpans: [{ scope: { name: 'scope \\ 𝄞', version: 'v\u0000' }, spans }],
      },
    ],
  });
}

describe.skipIf(mode !== 'server' && mode !== 'chdb')('awkward strings through OTLP into ClickHouse', () => {
  let ch: TestServer;
  let sq: TestServer;
  beforeAll(async () => {
    ch = await startTestServer();
    sq = await startTestServer({ clickhouse: false });
  });
  afterAll(async () => {
    await ch.close();
    await sq.close();
  });

  it('reads back every span name, attribute, event and status message as the SQLite store gives them', async () => {
    const body = otlpJson();
    for (const t of [ch, sq]) {
      const r = await fetch(`${t.url}/ingest/v1/traces`, { method: 'POST', body, headers: { 'x-service-key': t.keys.ingest, 'content-type': 'application/json' } });
      expect(r.status, await r.text()).toBe(200);
    }
    expect((ch.s.db.prepare('SELECT count(*) AS n FROM spans').get() as { n: number }).n).toBe(0);
    const stored = await ch.s.services.clickhouse!.engine.query<{ name: string; status_message: string; attributes: string; events: string; service_name: string; scope_name: string }>(
      'SELECT name, status_message, attributes, events, service_name, scope_name FROM spans ORDER BY span_id',
    );
    expect(stored).toHaveLength(AWKWARD.length);
    const trace = async (t: TestServer) => {
      const r = await api(t, 'GET', `/v1/projects/${t.projectId}/traces/${'cd'.repeat(16)}`, { key: t.keys.admin });
      expect(r.status).toBe(200);
      const spans = (r.body as { spans: Record<string, unknown>[] }).spans;
      return spans
        .map((s) => ({ span_id: s.span_id, name: s.name, status_message: s.status_message, attributes: s.attributes, events: s.events, service_name: s.service_name, scope: s.scope }))
        .sort((a, b) => String(a.span_id).localeCompare(String(b.span_id)));
    };
    const fromCh = await trace(ch);
    const fromSqlite = await trace(sq);
    expect(fromCh).toEqual(fromSqlite);
    // and as sent, where UTF-8 can hold it (a lone surrogate cannot: both stores give three U+FFFD back)
    const wellFormed = (s: string) => s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd\ufffd\ufffd');
    expect(fromCh.map((s) => s.name).sort()).toEqual(AWKWARD.map(wellFormed).sort());
    expect(stored.map((s) => s.name).sort()).toEqual(AWKWARD.map(wellFormed).sort());
    // The release rollups of those spans (service, environment and version awkward too) read the same.
    const releases = async (t: TestServer) => {
      const { from: _from, to: _to, ...body } = (await api(t, 'GET', `/v1/projects/${t.projectId}/releases`, { key: t.keys.admin })).body; // (the default window ends now)
      return body;
    };
    const [chReleases, sqReleases] = [await releases(ch), await releases(sq)];
    expect(chReleases.data.map((r: { version: string }) => r.version)).toEqual(['1.0 \ufffd\ufffd\ufffd']);
    expect(chReleases).toEqual(sqReleases);
  });
});

describe.skipIf(mode !== 'server' && mode !== 'chdb')('what the main thread still writes for spans bound for ClickHouse', () => {
  let t: TestServer;
  beforeAll(async () => {
    t = await startTestServer();
  });
  afterAll(() => t.close());

  it('counts every span in the release rollups and maps AI spans to observations (both in ClickHouse)', async () => {
    const now = Date.now();
    const span = (i: number, attributes: { key: string; value: { stringValue: string } }[]) => ({
      traceId: 'ef'.repeat(16),
      spanId: (i + 1).toString(16).padStart(16, '0'),
      name: `op ${i}`,
      kind: 2,
      startTimeUnixNano: String((now - 30_000 + i) * 1e6),
      endTimeUnixNano: String((now - 30_000 + i + 4) * 1e6),
      attributes,
      status: { code: i === 1 ? 2 : 1 },
    });
    const plain = [0, 1, 2].map((i) => span(i, [{ key: 'http.route', value: { stringValue: '/x' } }]));
    const ai = [span(3, [{ key: 'gen_ai.operation.name', value: { stringValue: 'chat' } }, { key: 'gen_ai.request.model', value: { stringValue: 'm-1' } }])];
    for (const spans of [plain, ai]) {
      const body = JSON.stringify({
        resourceSpans: [{ resource: { attributes: [{ key: 'service.name', value: { stringValue: 'rollup-svc' } }, { key: 'service.version', value: { stringValue: '9.9.9' } }] }, scopeSpans: [{ spans }] }],
      });
      const r = await fetch(`${t.url}/ingest/v1/traces`, { method: 'POST', body, headers: { 'x-service-key': t.keys.ingest, 'content-type': 'application/json' } });
      expect(r.status).toBe(200);
    }
    const rollup = await t.s.services.clickhouse!.engine.query<{ spans: number; requests: number; errors: number }>(
      "SELECT sum(spans) AS spans, sum(requests) AS requests, sum(errors) AS errors FROM release_rollup_1m WHERE service_name = 'rollup-svc' AND version = '9.9.9'",
    );
    expect(rollup.map((r) => ({ spans: Number(r.spans), requests: Number(r.requests), errors: Number(r.errors) }))).toEqual([{ spans: 4, requests: 4, errors: 1 }]);
    expect(t.s.db.prepare('SELECT count(*) AS n FROM release_rollup_1m').get()).toEqual({ n: 0 });
    const obs = await t.s.services.clickhouse!.engine.query('SELECT span_id, model FROM agent_observations');
    expect(obs).toEqual([{ span_id: (4).toString(16).padStart(16, '0'), model: 'm-1' }]);
    expect(t.s.db.prepare('SELECT count(*) AS n FROM agent_observations').get()).toEqual({ n: 0 });
    const stored = await t.s.services.clickhouse!.engine.query<{ name: string; attributes: string }>("SELECT name, attributes FROM spans WHERE service_name = 'rollup-svc' ORDER BY span_id");
    expect(stored.map((r) => r.name)).toEqual(['op 0', 'op 1', 'op 2', 'op 3']);
    expect(JSON.parse(stored[0]!.attributes)).toEqual({ 'http.route': '/x' });
  });
});
