/**
 * The faster read paths of revenue and AI observability answer exactly what the straightforward
 * computation answers, on randomized data:
 *  - converterTo is bit-for-bit convertMinor;
 *  - attribution rows (person map cached per identity epoch, one-pass conversion) equal rows resolved
 *    from a freshly loaded person map and convertMinor, also after identify merges change the map
 *    between two reads, and the attribution result built from them is identical;
 *  - ai.stats sessions/users (covering window index, cost-ordered index above 5,000 matches) equal
 *    a plain scan-and-sort over the table, for wide and narrow windows.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/storage/db.js';
import { createRevenueRepo } from '../../src/storage/revenue-repo.js';
import { createAnalyticsRepo } from '../../src/storage/analytics-repo.js';
import { createAiRepo } from '../../src/storage/ai-repo.js';
import { convertMinor, converterTo, FX_TABLE } from '../../src/domain/revenue/fx.js';
import { attribute, type AttributableRow } from '../../src/domain/revenue/attribution.js';
import { toLedgerRow, type LedgerRow, type LedgerType } from '../../src/domain/revenue/ledger.js';
import { normalizeCaptureEvent, type CaptureEvent } from '../../src/domain/analytics/capture.js';
import { emptyDraft, finalizeObservation } from '../../src/domain/ai/observation.js';

const dir = mkdtempSync(join(tmpdir(), 'sightline-perf-eq-'));
const db = openDatabase(join(dir, 'eq.db'));
afterAll(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

const DAY = 86_400_000;
const T0 = Date.parse('2026-06-01T00:00:00Z');
let seed = 99;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const int = (n: number) => Math.floor(rnd() * n);
const pick = <T,>(xs: readonly T[]) => xs[int(xs.length)]!;
const CURRENCIES = ['USD', 'EUR', 'GBP', 'JPY', 'KWD', 'XXX'];

describe('converterTo', () => {
  it('gives exactly convertMinor for every currency pair, including ones without a rate', () => {
    for (const to of ['USD', 'EUR', 'JPY', 'KWD', 'XXX']) {
      const conv = converterTo(to);
      for (let i = 0; i < 2000; i++) {
        const from = pick([...CURRENCIES, ...Object.keys(FX_TABLE.rates)]);
        const minor = (rnd() < 0.5 ? -1 : 1) * int(10_000_000);
        expect(Object.is(conv(minor, from), convertMinor(minor, from, to))).toBe(true);
      }
    }
  });
});

describe('attribution rows', () => {
  const pid = '1';
  const revenue = createRevenueRepo(db);
  const analytics = createAnalyticsRepo(db);
  const USERS = 300;
  let n = 0;

  function capture(count: number, identifyShare: number) {
    const events: CaptureEvent[] = [];
    for (let i = 0; i < count; i++) {
      const u = int(USERS);
      const ts = T0 + int(90 * DAY);
      const e =
        rnd() < identifyShare
          ? { event: '$identify', distinct_id: `user-${u}`, properties: { $anon_distinct_id: `anon-${pick([u, u, int(USERS)])}` }, timestamp: new Date(ts).toISOString() }
          : {
              event: '$pageview',
              distinct_id: rnd() < 0.5 ? `user-${u}` : `anon-${u}`,
              properties: { $current_url: `https://shop.example/p${rnd() < 0.5 ? `?utm_source=${pick(['google', 'mail', 'x'])}&utm_medium=${pick(['cpc', 'email'])}&utm_campaign=c${int(4)}` : ''}` },
              uuid: `00000000-0000-4000-8000-${String(n++).padStart(12, '0')}`,
              timestamp: new Date(ts).toISOString(),
            };
      events.push(normalizeCaptureEvent(e, null, T0 + 100 * DAY)!);
    }
    db.transaction(() => analytics.ingest(pid, events, T0 + 100 * DAY))();
  }

  function ledger(count: number) {
    const rows: LedgerRow[] = [];
    for (let i = 0; i < count; i++) {
      const u = int(USERS);
      const link = rnd();
      rows.push(
        toLedgerRow(
          {
            id: `l-${n++}`,
            type: pick(['payment', 'payment', 'payment', 'refund', 'dispute', 'dispute_reversal'] as LedgerType[]),
            amount: 1 + int(100_000),
            currency: pick(CURRENCIES),
            occurred_at: T0 + int(90 * DAY),
            ...(link < 0.5 ? { distinct_id: `user-${u}` } : link < 0.8 ? { anonymous_id: `anon-${u}` } : link < 0.9 ? { distinct_id: `nobody-${u}` } : {}),
            status: rnd() < 0.05 ? 'voided' : 'posted',
          },
          'api',
        ),
      );
    }
    db.transaction(() => revenue.writeLedger(pid, rows, T0 + 100 * DAY))();
  }

  /** The straightforward computation: the person map read now, convertMinor per row. */
  function reference(from: number, to: number, cur: string) {
    const persons = new Map<string, string>();
    for (const r of db.prepare('SELECT distinct_id, person_id FROM analytics_distinct_ids WHERE project_id = ?').all(Number(pid)) as { distinct_id: string; person_id: number }[]) persons.set(r.distinct_id, `p:${r.person_id}`);
    const missing = new Set<string>();
    const rows: AttributableRow[] = (
      db
        .prepare(`SELECT type, amount, currency, occurred_at, distinct_id, anonymous_id FROM revenue_events INDEXED BY revenue_events_people
          WHERE project_id = ? AND occurred_at >= ? AND occurred_at < ? AND status = 'posted'`)
        .all(Number(pid), from, to) as { type: string; amount: number; currency: string; occurred_at: number; distinct_id: string | null; anonymous_id: string | null }[]
    ).map((r) => {
      const d = r.distinct_id;
      const a = r.anonymous_id;
      const value = convertMinor(r.amount, r.currency, cur);
      if (value === null) missing.add(r.currency);
      const person = (d !== null ? persons.get(d) : undefined) ?? (a !== null ? persons.get(a) : undefined) ?? (d !== null ? `d:${d}` : a !== null ? `d:${a}` : null);
      return { type: r.type, value, occurred_at: r.occurred_at, person };
    });
    const touches = new Map<string, { ts: number; source: string | null; medium: string | null; campaign: string | null }[]>();
    for (const t of db.prepare('SELECT distinct_id, ts, source, medium, campaign FROM analytics_touches WHERE project_id = ? AND ts >= ? AND ts <= ? ORDER BY ts').all(Number(pid), from - 30 * DAY, to) as { distinct_id: string; ts: number; source: string | null; medium: string | null; campaign: string | null }[]) {
      const key = persons.get(t.distinct_id) ?? `d:${t.distinct_id}`;
      const l = touches.get(key) ?? [];
      l.push({ ts: t.ts, source: t.source, medium: t.medium, campaign: t.campaign });
      touches.set(key, l);
    }
    return { rows, missing: [...missing].sort(), touches };
  }

  function compare(from: number, to: number, cur: string) {
    const ref = reference(from, to, cur);
    const missing = new Set<string>();
    const fast = revenue.attributableRows(pid, from, to, converterTo(cur), missing);
    expect(fast).toEqual(ref.rows);
    for (let i = 0; i < fast.length; i++) expect(Object.is(fast[i]!.value, ref.rows[i]!.value)).toBe(true);
    expect([...missing].sort()).toEqual(ref.missing);
    const touches = analytics.touchesByPerson(pid, from - 30 * DAY, to);
    expect(touches).toEqual(ref.touches);
    for (const model of ['first_touch', 'last_touch'] as const) {
      for (const dimension of ['source', 'medium', 'campaign'] as const) {
        const opts = { model, dimension, lookbackMs: 30 * DAY, maxTouchRows: 100, round: (v: number) => v };
        expect(attribute(fast, (p) => touches.get(p) ?? [], opts)).toEqual(attribute(ref.rows, (p) => ref.touches.get(p) ?? [], opts));
      }
    }
  }

  it('match the straightforward computation, before and after merges change who is who', () => {
    capture(3000, 0.03);
    ledger(3000);
    compare(T0, T0 + 90 * DAY, 'USD');
    compare(T0 + 17 * DAY + 1234, T0 + 40 * DAY, 'EUR');
    // Identify merges move distinct ids between persons: the cached map must not be used any more.
    capture(800, 0.5);
    ledger(500);
    compare(T0, T0 + 90 * DAY, 'USD');
    compare(T0 + 3 * DAY, T0 + 60 * DAY + 999, 'JPY');
    // A second repository on the same file (another process) sees the same epoch.
    const other = createRevenueRepo(openDatabase(join(dir, 'eq.db')));
    expect(other.attributableRows(pid, T0, T0 + 90 * DAY, converterTo('USD'), new Set())).toEqual(reference(T0, T0 + 90 * DAY, 'USD').rows);
  });
});

describe('ai.stats sessions and users', () => {
  const ai = createAiRepo(db);
  const pid = '2';

  function reference(kind: 'session' | 'user', fromMs: number, toMs: number, limit: number) {
    const [table, col] = kind === 'session' ? ['agent_sessions', 'session_id'] : ['agent_users', 'user_id'];
    const all = db
      .prepare(`SELECT ${col} AS key, n, generations, errors, cost_sum AS cost, tokens_sum AS tokens, first_ms, last_ms FROM ${table} NOT INDEXED WHERE project_id = ?`)
      .all(Number(pid)) as { key: string; n: number; cost: number; first_ms: number; last_ms: number }[];
    const active = all.filter((p) => p.last_ms >= fromMs && p.first_ms < toMs && p.n > 0);
    active.sort((a, b) => b.cost - a.cost || b.n - a.n || (a.key < b.key ? -1 : a.key > b.key ? 1 : 0));
    return { count: active.length, top: active.slice(0, limit) };
  }

  it('match a scan and sort of every party, with few and with many active ones', () => {
    const rows: ReturnType<typeof finalizeObservation>[] = [];
    for (let i = 0; i < 7000; i++) {
      const started = T0 + int(10 * DAY);
      const gen = rnd() < 0.6;
      rows.push(
        finalizeObservation(
          emptyDraft({
            observation_id: `o-${i}`,
            session_id: `s-${i % 6000}`,
            user_id: `u-${int(200)}`,
            observation_type: gen ? 'generation' : 'tool_call',
            model: gen ? pick(['gpt-4o', 'gpt-4o-mini']) : '',
            provider: gen ? 'openai' : '',
            started_ms: started,
            ended_ms: started + int(2000),
            // Few distinct costs so ties on cost and n are common: the order must still agree.
            prompt_tokens: gen ? pick([100, 200, 300]) : null,
            completion_tokens: gen ? pick([10, 20]) : null,
          }),
          { receivedMs: T0 + 11 * DAY, projectPrivacy: false },
        ),
      );
    }
    db.transaction(() => ai.writeObservations(pid, rows))();
    for (const [from, to] of [
      [T0 - DAY, T0 + 11 * DAY],
      [T0 + 2 * DAY, T0 + 9 * DAY],
      [T0 + 5 * DAY, T0 + 5 * DAY + 3_600_000],
      [T0 + 20 * DAY, T0 + 21 * DAY],
    ] as const) {
      for (const kind of ['session', 'user'] as const) {
        const fast = ai.parties(pid, kind, from, to, 10);
        expect(fast).toEqual(reference(kind, from, to, 10));
      }
    }
    expect(ai.parties(pid, 'session', T0 - DAY, T0 + 11 * DAY, 10).count).toBeGreaterThan(5000);
  });
});

describe('AI window reads (quality, ai.stats, ai.histogram)', () => {
  const ai = createAiRepo(db);
  const pid = '3';
  const HOUR = 3_600_000;
  const H0 = T0 + 40 * DAY; // an hour boundary
  const MODELS = ['gpt-4o', 'gpt-4o-mini', 'claude-sonnet-4-20250514'];

  // The straightforward answers: every row of the window, no rollups.
  const FLAGS = ['f_gen', 'f_gen_ok', 'f_chat', 'f_trace', 'f_input', 'f_system', 'f_output', 'f_model', 'f_tokens', 'f_cost', 'f_invalid_tokens', 'f_privacy', 'f_content', 'f_reasoning', 'f_tool_payload', 'f_error'];
  const USAGE = `count(*) AS n, COALESCE(SUM(f_gen), 0) AS generations, COALESCE(SUM(f_error), 0) AS errors,
    COALESCE(SUM(observation_type = 'tool_call'), 0) AS tool_calls, COALESCE(SUM(cost_usd), 0) AS cost, COALESCE(SUM(prompt_tokens), 0) AS prompt,
    COALESCE(SUM(completion_tokens), 0) AS completion, COALESCE(SUM(total_tokens), 0) AS tokens,
    COALESCE(SUM(CASE WHEN observation_type = 'generation' THEN duration_ms ELSE 0 END), 0) AS gen_duration`;
  const rowsOf = (from: number, to: number, model?: string) =>
    `FROM agent_observations WHERE project_id = ${Number(pid)} AND started_ms >= ${from} AND started_ms < ${to}${model ? ` AND model = '${model}'` : ''}`;
  const refQuality = (from: number, to: number, model?: string) =>
    db.prepare(`SELECT count(*) AS n, ${FLAGS.map((f) => `COALESCE(SUM(${f}), 0) AS ${f}`).join(', ')} ${rowsOf(from, to, model)}`).get();
  const refUsage = (from: number, to: number) => db.prepare(`SELECT ${USAGE} ${rowsOf(from, to)}`).get() as Record<string, number>;
  const refByDay = (from: number, to: number) =>
    db.prepare(`SELECT CAST(started_ms / ${DAY} AS INTEGER) * ${DAY} AS day, ${USAGE} ${rowsOf(from, to)} GROUP BY 1 ORDER BY 1`).all() as Record<string, number>[];
  const refByModel = (from: number, to: number) =>
    db.prepare(`SELECT model AS key, ${USAGE} ${rowsOf(from, to)} AND model != '' GROUP BY model HAVING SUM(f_gen) > 0 ORDER BY generations DESC, key LIMIT 10`).all() as Record<string, number>[];
  // Rollup sums of costs are added in another order than the rows': equal to the last few bits.
  const close = (a: Record<string, number>, b: Record<string, number>) => {
    expect(Object.keys(a).sort()).toEqual(Object.keys(b).sort());
    for (const k of Object.keys(b)) if (k === 'cost') expect(a[k]).toBeCloseTo(b[k]!, 9);
    else expect([k, a[k]]).toEqual([k, b[k]]);
  };

  function write(n: number, from: number, to: number, tag: string) {
    const rows: ReturnType<typeof finalizeObservation>[] = [];
    for (let i = 0; i < n; i++) {
      const started = from + int(to - from);
      const gen = rnd() < 0.6;
      rows.push(
        finalizeObservation(
          emptyDraft({
            observation_id: `w-${tag}-${i}`,
            observation_type: gen ? 'generation' : rnd() < 0.5 ? 'tool_call' : 'agent_step',
            status: rnd() < 0.1 ? 'error' : 'ok',
            model: gen ? pick(MODELS) : '',
            provider: gen && rnd() < 0.8 ? 'openai' : '',
            started_ms: started,
            ended_ms: started + int(3000),
            prompt_tokens: gen ? 100 + int(500) : null,
            completion_tokens: gen ? int(100) : null,
            input: gen && rnd() < 0.9 ? { messages: [{ role: 'user', content: 'q' }] } : null,
            output: gen && rnd() < 0.9 ? { messages: [{ role: 'assistant', content: 'a' }] } : null,
          }),
          { receivedMs: to, projectPrivacy: false },
        ),
      );
    }
    db.transaction(() => ai.writeObservations(pid, rows))();
  }

  function compareAll(from: number, to: number) {
    close(ai.qualitySums(pid, from, to, {}) as unknown as Record<string, number>, refQuality(from, to) as Record<string, number>);
    close(ai.qualitySums(pid, from, to, { model: 'gpt-4o' }) as unknown as Record<string, number>, refQuality(from, to, 'gpt-4o') as Record<string, number>);
    close(ai.usage(pid, from, to) as unknown as Record<string, number>, refUsage(from, to));
    const days = ai.usageByDay(pid, from, to) as unknown as Record<string, number>[];
    const refDays = refByDay(from, to);
    expect(days.length).toBe(refDays.length);
    days.forEach((d, i) => close(d, refDays[i]!));
    const models = ai.usageBy(pid, from, to, 'model', 10) as unknown as Record<string, number>[];
    const refModels = refByModel(from, to);
    expect(models.map((m) => m.key)).toEqual(refModels.map((m) => m.key));
    models.forEach((m, i) => close(m, refModels[i]!));
  }

  it('equal a scan of the rows, with and without observations after the window in its edge hours', () => {
    write(3000, H0 - 2 * DAY, H0 + 2 * HOUR + 20 * 60_000, 'a'); // the last hour filled up to 20 minutes in
    const last = H0 + 2 * HOUR + 20 * 60_000;
    for (const [from, to] of [
      [H0 - 2 * DAY - HOUR, last + 60_000], // ends after every row: the last hour from its rollup
      [H0 - DAY + 17 * 60_000, last + 60_000], // starts mid-hour with rows before it in that hour
      [H0 - 5 * DAY, last - 7 * 60_000], // ends mid-hour with rows after it in that hour
      [H0 + 2 * HOUR + 60_000, last - 60_000], // inside one hour, rows on both sides
      [H0 + 2 * HOUR + 60_000, last + 60_000], // inside one hour, rows before it
      [H0 + 2 * HOUR + 30 * 60_000, H0 + 2 * HOUR + 50 * 60_000], // inside one hour, empty
      [H0 - 30 * 60_000, H0 + 20 * 60_000], // two partial hours, no whole hour
      [H0 - 3 * DAY, H0 - 3 * DAY + 5 * 60_000], // before every row
    ] as const) compareAll(from, to);
  });

  it("reads an edge hour from its rollup row only when none of the hour's observations lies outside the window", () => {
    const last = H0 + 2 * HOUR + 20 * 60_000;
    const lastHour = H0 + 2 * HOUR;
    write(1, lastHour + 10_000, lastHour + 10_001, 'b'); // an observation in the first minute of the last hour
    // Mark the last hour's rollup row: an answer that includes the mark came from the rollup.
    const mark = (d: number) => db.prepare(`UPDATE agent_obs_1h SET n = n + ? WHERE project_id = ? AND dim = '' AND hour_ms = ?`).run(d, Number(pid), lastHour);
    mark(1000);
    try {
      expect(ai.usage(pid, H0, last + 60_000).n).toBe(refUsage(H0, last + 60_000).n + 1000);
      expect(ai.usage(pid, H0, last - 7 * 60_000).n).toBe(refUsage(H0, last - 7 * 60_000).n);
      // Leading edge: the window starts in the last hour after its first observation.
      expect(ai.usage(pid, lastHour + 60_000, last + 60_000).n).toBe(refUsage(lastHour + 60_000, last + 60_000).n);
    } finally {
      mark(-1000);
    }
    expect(ai.usage(pid, H0, last + 60_000).n).toBe(refUsage(H0, last + 60_000).n);
  });
});
