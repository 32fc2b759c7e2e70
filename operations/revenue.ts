import { z } from 'zod';
import { defineOperation, type HandlerContext } from './define.js';
import { isoDateTime, projectId, queryInt, toIso } from './shared.js';
import { NotFoundError, ValidationError } from '../src/core/errors.js';
import { analyticsErrors, cached, checkRangeSize, fxOut, fxSchema, rangeOut, rangeParams, readRange, reportingCurrency, requireAnalytics } from './revenue-shared.js';
import { LEDGER_STATUSES, LEDGER_TYPES, MAX_FUTURE_MS, toLedgerRow, type LedgerRow, type LedgerType } from '../src/domain/revenue/ledger.js';
import { convertMinor, FX_TABLE, hasRate, ISO_CURRENCY, reportingMinorOf, roundMoney, toMajor } from '../src/domain/revenue/fx.js';
import { bucketIndex, bucketStarts, DAY_MS, previousRange, seriesInterval } from '../src/domain/revenue/range.js';
import { computeMrr } from '../src/domain/revenue/mrr.js';
import { attributePacked, Scratch } from '../src/domain/revenue/attribution-fast.js';
import { estimateImpact, IMPACT_METHOD, IMPACT_WINDOW_DAYS } from '../src/domain/revenue/impact.js';

const P = '/v1/projects/{project_id}/revenue';
const money = z.number().describe('Decimal amount in the reporting currency.');
const currencyCode = z
  .string()
  .regex(ISO_CURRENCY, 'must be an ISO 4217 code such as USD')
  .transform((c) => c.toUpperCase());
const text = (max: number) => z.string().trim().min(1).max(max);

// ---- sums of one range -----------------------------------------------------------------------

interface RangeSums {
  gross: number;
  refunds: number;
  disputes: number;
  dispute_reversals: number;
  net: number;
  payments: number;
  rows: number;
}

type Acc = Record<LedgerType, Map<string, number>>;
const newAcc = (): Acc => ({ payment: new Map(), refund: new Map(), dispute: new Map(), dispute_reversal: new Map() });
const add = (m: Map<string, number>, k: string, v: number) => m.set(k, (m.get(k) ?? 0) + v);

/**
 * Sums of one range. Every converted figure adds integers: each ledger row converted and rounded to
 * the reporting currency's minor unit on its own (toReportingMinor), kept summed per day in the rollup.
 */
function sumsOf(ctx: HandlerContext, pid: string, r: { from: number; to: number }, cur: string, missing: Set<string>) {
  const totals = ctx.services.revenue.totals(pid, r.from, r.to, cur);
  const acc = newAcc();
  const conv = newAcc();
  const plans = new Map<string, { gross: number; net: number; payments: number }>();
  let payments = 0;
  let rows = 0;
  const sum = { payment: 0, refund: 0, dispute: 0, dispute_reversal: 0 };
  for (const t of totals) {
    rows += t.n;
    add(acc[t.type], t.currency, t.amount);
    if (t.type === 'payment') payments += t.n;
    if (t.converted === null) {
      missing.add(t.currency);
      continue;
    }
    add(conv[t.type], t.currency, t.converted);
    sum[t.type] += t.converted;
    const pl = plans.get(t.plan) ?? { gross: 0, net: 0, payments: 0 };
    pl.net += t.converted;
    if (t.type === 'payment') {
      pl.gross += t.converted;
      pl.payments += t.n;
    }
    plans.set(t.plan, pl);
  }
  const m = (minor: number) => toMajor(minor, cur);
  const sums: RangeSums = {
    gross: m(sum.payment),
    refunds: m(sum.refund),
    disputes: m(sum.dispute),
    dispute_reversals: m(sum.dispute_reversal),
    net: m(sum.payment + sum.refund + sum.dispute + sum.dispute_reversal),
    payments,
    rows,
  };
  return { sums, acc, conv, plans };
}

const sumsSchema = {
  gross: money.describe('Posted payments.'),
  refunds: money.describe('Refunds (negative).'),
  disputes: money.describe('Disputes (negative).'),
  dispute_reversals: money.describe('Dispute reversals (positive).'),
  net: money.describe('gross + refunds + disputes + dispute_reversals.'),
  payments: z.number().int(),
  customers: z.number().int().describe('Distinct paying customers (customer_id, else distinct_id, else anonymous_id).'),
};

export const overview = defineOperation({
  operationId: 'revenue.overview',
  tag: 'revenue',
  summary: 'Revenue totals, series and breakdowns for a range',
  description:
    'Gross, refunds (negative), disputes (negative), dispute reversals, net, paying customers, a series (daily up to 92 days, weekly beyond), breakdowns by currency and by plan, and the previous period of equal length. Amounts are decimals in the reporting currency: each ledger row is converted with the bundled approximate rate table (`fx.source`, `fx.date`) and rounded to the minor unit of the reporting currency on its own, as payment processors report a converted transaction, then the rounded amounts are added (so a total can differ by a few minor units from converting the total at once). Currencies without a rate are listed in `fx.missing_currencies` and appear only in `by_currency`. Results are kept up to 5 minutes; new revenue starts a fresh one. The range is at most 400 days.',
  method: 'GET',
  path: `${P}/overview`,
  scopes: ['revenue:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, ...rangeParams }),
  output: z.object({
    ...rangeOut,
    ...sumsSchema,
    interval: z.enum(['day', 'week']),
    series: z.array(z.object({ start: z.string(), gross: money, refunds: money, disputes: money, net: money })),
    by_currency: z.array(
      z.object({
        currency: z.string(),
        gross: z.number().describe('In this currency (decimal).'),
        refunds: z.number(),
        disputes: z.number(),
        dispute_reversals: z.number(),
        net: z.number(),
        net_converted: z.number().nullable().describe('Net in the reporting currency; null without a rate.'),
      }),
    ),
    by_plan: z.array(z.object({ plan: z.string().nullable(), gross: money, net: money, payments: z.number().int() })),
    previous: z.object({ from: z.string(), to: z.string(), ...sumsSchema }),
    fx: fxSchema,
    cached: z.boolean(),
  }),
  errors: [...analyticsErrors, { status: 400, code: 'invalid_parameter', when: 'bad from/to or a range above 400 days' }, { status: 422, code: 'RANGE_TOO_LARGE', when: 'the range holds more ledger rows than one read may cover' }],
  example: { from: '2026-01-01T00:00:00Z', to: '2026-02-01T00:00:00Z' },
  handler(input, ctx) {
    const pid = requireAnalytics(ctx);
    const range = readRange(input, ctx.now());
    const cur = reportingCurrency(ctx, pid);
    return cached(ctx, pid, `overview:${range.from}:${range.to}:${cur}`, () => {
      const missing = new Set<string>();
      const { sums, acc, conv, plans } = sumsOf(ctx, pid, range, cur, missing);
      checkRangeSize(ctx, sums.rows);
      const prevRange = previousRange(range);
      const prev = sumsOf(ctx, pid, prevRange, cur, new Set());
      checkRangeSize(ctx, prev.sums.rows);
      const interval = seriesInterval(range);
      const starts = bucketStarts(range, interval);
      const series = starts.map((s) => ({ start: s, gross: 0, refunds: 0, disputes: 0, net: 0 }));
      for (const p of ctx.services.revenue.series(pid, range.from, range.to, cur, (ts) => bucketIndex(ts, starts, interval))) {
        const b = series[p.bucket];
        const v = p.converted;
        if (!b || v === null) continue;
        if (p.type === 'payment') b.gross += v;
        else if (p.type === 'refund') b.refunds += v;
        else if (p.type === 'dispute') b.disputes += v;
        b.net += v;
      }
      const currencies = new Set<string>(Object.values(acc).flatMap((m) => [...m.keys()]));
      const major = (m: Map<string, number>, c: string) => toMajor(m.get(c) ?? 0, c);
      const by_currency = [...currencies].sort().map((c) => {
        const netMinor = (acc.payment.get(c) ?? 0) + (acc.refund.get(c) ?? 0) + (acc.dispute.get(c) ?? 0) + (acc.dispute_reversal.get(c) ?? 0);
        const rated = conv.payment.has(c) || conv.refund.has(c) || conv.dispute.has(c) || conv.dispute_reversal.has(c);
        const netConverted = (conv.payment.get(c) ?? 0) + (conv.refund.get(c) ?? 0) + (conv.dispute.get(c) ?? 0) + (conv.dispute_reversal.get(c) ?? 0);
        return {
          currency: c,
          gross: major(acc.payment, c),
          refunds: major(acc.refund, c),
          disputes: major(acc.dispute, c),
          dispute_reversals: major(acc.dispute_reversal, c),
          net: toMajor(netMinor, c),
          net_converted: rated ? toMajor(netConverted, cur) : null,
        };
      });
      const by_plan = [...plans.entries()]
        .map(([plan, v]) => ({ plan: plan || null, gross: toMajor(v.gross, cur), net: toMajor(v.net, cur), payments: v.payments }))
        .sort((a, b) => b.net - a.net || String(a.plan).localeCompare(String(b.plan)));
      return {
        from: toIso(range.from)!,
        to: toIso(range.to)!,
        currency: cur,
        ...stripRows(sums),
        customers: ctx.services.revenue.customers(pid, range.from, range.to),
        interval,
        series: series.map((b) => ({ start: toIso(b.start)!, gross: toMajor(b.gross, cur), refunds: toMajor(b.refunds, cur), disputes: toMajor(b.disputes, cur), net: toMajor(b.net, cur) })),
        by_currency,
        by_plan,
        previous: {
          from: toIso(prevRange.from)!,
          to: toIso(prevRange.to)!,
          ...stripRows(prev.sums),
          customers: ctx.services.revenue.customers(pid, prevRange.from, prevRange.to),
        },
        fx: fxOut(missing),
      };
    });
  },
});

function stripRows(s: RangeSums) {
  const { rows: _rows, ...rest } = s;
  return rest;
}

export const mrr = defineOperation({
  operationId: 'revenue.mrr',
  tag: 'revenue',
  summary: 'MRR at the start and end of a range, with movements and a series',
  description:
    'Monthly recurring revenue from the kept subscription states. A subscription\'s MRR at a time is the `mrr` of its latest state effective at or before it. Movements compare each subscription at the range start (a) and end (b): new (a = 0, b > 0, never paid before), reactivation (a = 0, b > 0, paid before), expansion (b > a > 0: b − a), contraction (a > b > 0: a − b), churn (a > 0, b = 0: a); end = start + new + reactivation + expansion − contraction − churn. The series gives MRR at the end of each day (weekly beyond 92 days). The range is at most 400 days.',
  method: 'GET',
  path: `${P}/mrr`,
  scopes: ['revenue:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, ...rangeParams }),
  output: z.object({
    ...rangeOut,
    start_mrr: money,
    end_mrr: money,
    movements: z.object({ new: money, expansion: money, contraction: money, churn: money, reactivation: money }),
    subscriptions: z.object({ active_start: z.number().int(), active_end: z.number().int() }),
    interval: z.enum(['day', 'week']),
    series: z.array(z.object({ at: z.string(), mrr: money })),
    fx: fxSchema,
    cached: z.boolean(),
  }),
  errors: [...analyticsErrors, { status: 400, code: 'invalid_parameter', when: 'bad from/to or a range above 400 days' }, { status: 422, code: 'RANGE_TOO_LARGE', when: 'too many subscription states to compute' }],
  example: { from: '2026-01-01T00:00:00Z', to: '2026-02-01T00:00:00Z' },
  handler(input, ctx) {
    const pid = requireAnalytics(ctx);
    const range = readRange(input, ctx.now());
    const cur = reportingCurrency(ctx, pid);
    return cached(ctx, pid, `mrr:${range.from}:${range.to}:${cur}`, () => {
      const states = ctx.services.revenue.subscriptionStates(pid, range.to);
      checkRangeSize(ctx, states.length);
      const interval = seriesInterval(range);
      const step = interval === 'day' ? DAY_MS : 7 * DAY_MS;
      const points = bucketStarts(range, interval).map((s) => Math.min(s + step, range.to));
      const r = computeMrr(states, range, points, (minor, c) => convertMinor(minor, c, cur));
      const m = (v: number) => roundMoney(v, cur);
      return {
        from: toIso(range.from)!,
        to: toIso(range.to)!,
        currency: cur,
        start_mrr: m(r.start_mrr),
        end_mrr: m(r.end_mrr),
        movements: { new: m(r.movements.new), expansion: m(r.movements.expansion), contraction: m(r.movements.contraction), churn: m(r.movements.churn), reactivation: m(r.movements.reactivation) },
        subscriptions: r.subscriptions,
        interval,
        series: r.series.map((p) => ({ at: toIso(p.at)!, mrr: m(p.mrr) })),
        fx: fxOut(r.missing),
      };
    });
  },
});

/** Arrays the attribution reads reuse (each read runs synchronously, so two never overlap). */
const attributionScratch = new Scratch();

export const attribution = defineOperation({
  operationId: 'revenue.attribution',
  tag: 'revenue',
  summary: 'Net revenue by marketing source, medium or campaign',
  description:
    'Credits each ledger row in range to the first or last touch (a pageview with UTM source/medium/campaign, or an external referrer as source with medium `referral`) of its person within `lookback_days` before it. Kinds: `touch`; `direct` (known person, no touch with a value for the dimension); `unlinked` (no distinct_id or anonymous_id). Amounts are converted and rounded per ledger row as in revenue.overview. `share` is the percentage of net revenue in range. Touch rows first, by net, at most 100 (`truncated` when more).',
  method: 'GET',
  path: `${P}/attribution`,
  scopes: ['revenue:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    ...rangeParams,
    model: z.enum(['last_touch', 'first_touch']).default('last_touch'),
    dimension: z.enum(['source', 'medium', 'campaign']).default('source'),
    lookback_days: queryInt({ min: 1, max: 365, default: 30, describe: 'How far before a payment a touch may be (default 30 days).' }),
  }),
  output: z.object({
    ...rangeOut,
    model: z.enum(['last_touch', 'first_touch']),
    dimension: z.enum(['source', 'medium', 'campaign']),
    lookback_days: z.number().int(),
    net: money.describe('Net revenue in range (converted).'),
    rows: z.array(
      z.object({
        value: z.string().nullable(),
        kind: z.enum(['touch', 'direct', 'unlinked']),
        net: money,
        share: z.number().describe('Percent of the net revenue in range.'),
        payments: z.number().int(),
        people: z.number().int(),
      }),
    ),
    truncated: z.boolean(),
    fx: fxSchema,
    cached: z.boolean(),
  }),
  errors: [...analyticsErrors, { status: 400, code: 'invalid_parameter', when: 'bad range, model or dimension' }, { status: 422, code: 'RANGE_TOO_LARGE', when: 'the range holds more ledger rows than one read may cover' }],
  example: { model: 'last_touch', dimension: 'source' },
  handler(input, ctx) {
    const pid = requireAnalytics(ctx);
    const range = readRange(input, ctx.now());
    const cur = reportingCurrency(ctx, pid);
    return cached(ctx, pid, `attribution:${range.from}:${range.to}:${cur}:${input.model}:${input.dimension}:${input.lookback_days}`, () => {
      const rowCount = ctx.services.revenue.totals(pid, range.from, range.to, cur).reduce((n, t) => n + t.n, 0);
      checkRangeSize(ctx, rowCount);
      const lookbackMs = input.lookback_days * DAY_MS;
      const missing = new Set<string>();
      // Packed day rows and the touches with a value for the dimension, by person index: linear in both
      // (attribution-fast.ts), equal to `attribute` over attributableRows + touchesByPerson.
      const { rows } = ctx.services.revenue.packedRows(pid, range.from, range.to, cur, missing, attributionScratch);
      const touches = ctx.services.analytics.packedTouches(pid, range.from - lookbackMs, range.to, input.dimension, attributionScratch);
      let persons = 0;
      for (let i = 0; i < rows.n; i++) persons = Math.max(persons, rows.person[i]! + 1);
      for (let i = 0; i < touches.n; i++) persons = Math.max(persons, touches.person[i]! + 1);
      const opts = { model: input.model, dimension: input.dimension, lookbackMs, maxTouchRows: 100, round: (minor: number) => toMajor(minor, cur) };
      const r = attributePacked(rows, touches, persons, opts, attributionScratch);
      return {
        from: toIso(range.from)!,
        to: toIso(range.to)!,
        currency: cur,
        model: input.model,
        dimension: input.dimension,
        lookback_days: input.lookback_days,
        net: r.total,
        rows: r.rows,
        truncated: r.truncated,
        fx: fxOut(missing),
      };
    });
  },
});

export const impact = defineOperation({
  operationId: 'revenue.impact',
  tag: 'revenue',
  summary: 'Estimated revenue at risk from an issue, incident, release or page',
  description:
    'Finds the browser sessions that had the problem in the last 30 days (issue: sessions linked to the error group\'s events by a `posthog_session_id`/`$session_id` tag or through their replay; incident: sessions with errors during the incident; release: sessions with errors of that release version; page: sessions that viewed the path), the identified people among them and their net revenue over the same 30 days (R). Method `affected_identified_net_30d`: low = R, high = R × affected sessions ÷ identified affected sessions. Status `estimated`, `no_sessions`, `no_identity` or `no_revenue` (range 0). Unknown issue, incident or release ids answer 404.',
  method: 'GET',
  path: `${P}/impact`,
  scopes: ['revenue:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    target: z.enum(['issue', 'incident', 'release', 'page']),
    id: z.string().min(1).max(2048).describe('Error group id, incident id, release version, or a page path starting with /.'),
  }),
  output: z.object({
    target: z.enum(['issue', 'incident', 'release', 'page']),
    id: z.string(),
    status: z.enum(['estimated', 'no_sessions', 'no_identity', 'no_revenue']),
    low: money,
    high: money,
    currency: z.string(),
    method: z.string(),
    window: z.object({ from: z.string(), to: z.string() }),
    sessions: z.number().int().describe('Affected browser sessions.'),
    identified_sessions: z.number().int(),
    people: z.number().int().describe('Identified people among the affected sessions.'),
    fx: fxSchema,
    cached: z.boolean(),
  }),
  errors: [...analyticsErrors, { status: 404, code: 'not_found', when: 'unknown issue, incident or release' }, { status: 400, code: 'invalid_parameter', when: 'bad target or a page id that is not a path' }],
  example: { target: 'page', id: '/checkout' },
  async handler(input, ctx) {
    const pid = requireAnalytics(ctx);
    const now = ctx.now();
    const window = { from: now - IMPACT_WINDOW_DAYS * DAY_MS, to: now };
    const a = ctx.services.analytics;
    let sessions: string[];
    if (input.target === 'issue') {
      if (!ctx.services.lookups.errorGroupExists(pid, input.id)) throw new NotFoundError('Issue', 'id');
      sessions = (await a.sessionsOfErrors(pid, { groupId: input.id, since: window.from })).sessions;
    } else if (input.target === 'incident') {
      const w = ctx.services.lookups.incidentWindow(pid, input.id);
      if (!w) throw new NotFoundError('Incident', 'id');
      sessions = (await a.sessionsOfErrors(pid, { window: w, since: window.from })).sessions;
    } else if (input.target === 'release') {
      if (!(await a.releaseKnown(pid, input.id))) throw new NotFoundError('Release', 'id');
      sessions = (await a.sessionsOfErrors(pid, { release: input.id, since: window.from })).sessions;
    } else {
      if (!input.id.startsWith('/')) throw new ValidationError('A page id is a path starting with `/`, e.g. /checkout.', 'id');
      sessions = a.sessionsOfPage(pid, input.id.split(/[?#]/)[0]!, window.from);
    }
    const cur = reportingCurrency(ctx, pid);
    const key = `impact:${input.target}:${input.id}:${cur}:${Math.floor(now / 60_000)}`;
    return cached(ctx, pid, key, () => {
      const people = new Set<string>();
      let identifiedSessions = 0;
      for (const sid of sessions) {
        const sp = a.sessionPeople(pid, sid);
        if (sp.identifiedPeople.length) identifiedSessions++;
        for (const p of sp.identifiedPeople) people.add(p);
      }
      const missing = new Set<string>();
      let netMinor = 0;
      if (people.size) {
        const rm = reportingMinorOf(cur);
        for (const r of ctx.services.revenue.rowsWithPeople(pid, window.from, window.to)) {
          if (!r.person || !people.has(r.person)) continue;
          const v = rm(r.amount, r.currency);
          if (v === null) missing.add(r.currency);
          else netMinor += v;
        }
      }
      const est = estimateImpact({ sessions: sessions.length, identifiedSessions, net: toMajor(netMinor, cur) });
      return {
        target: input.target,
        id: input.id,
        status: est.status,
        low: roundMoney(est.low, cur),
        high: roundMoney(est.high, cur),
        currency: cur,
        method: IMPACT_METHOD,
        window: { from: toIso(window.from)!, to: toIso(window.to)! },
        sessions: sessions.length,
        identified_sessions: identifiedSessions,
        people: people.size,
        fx: fxOut(missing),
      };
    });
  },
});

// ---- ledger ------------------------------------------------------------------------------------

const ledgerItemSchema = z.object({
  id: z.string(),
  type: z.enum(LEDGER_TYPES),
  amount: z.number().int().describe('Signed smallest-unit amount: refunds and disputes negative.'),
  currency: z.string(),
  occurred_at: z.string(),
  customer_id: z.string().nullable(),
  distinct_id: z.string().nullable(),
  anonymous_id: z.string().nullable(),
  parent_id: z.string().nullable(),
  subscription_id: z.string().nullable(),
  plan: z.string().nullable(),
  recurring: z.boolean(),
  status: z.enum(LEDGER_STATUSES),
  source: z.string().describe('`api` (revenue.sendEvents) or `stripe` (webhook, backfill).'),
});

const ledgerOut = (r: LedgerRow): z.input<typeof ledgerItemSchema> => ({ ...r, occurred_at: toIso(r.occurred_at)! });

const encodeCursor = (r: LedgerRow) => Buffer.from(JSON.stringify([r.occurred_at, r.id])).toString('base64url');
function decodeCursor(c: string): { at: number; id: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(c, 'base64url').toString('utf8'));
    if (typeof at === 'number' && typeof id === 'string') return { at, id };
  } catch {
    /* fall through */
  }
  throw new ValidationError('`cursor` is not a cursor this list returned: send `next_cursor` unchanged.', 'cursor');
}

export const listEvents = defineOperation({
  operationId: 'revenue.listEvents',
  tag: 'revenue',
  summary: 'List ledger rows, newest first',
  description:
    'Ledger rows (payments, refunds, disputes, dispute reversals; voided rows included with their status), newest first by `occurred_at`, with a cursor: send `cursor` = the previous `next_cursor` until it is null. Filter by `kind` and optionally `from`/`to`. No window limit: pages bound the work.',
  method: 'GET',
  path: `${P}/events`,
  scopes: ['revenue:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    kind: z.enum(LEDGER_TYPES).optional().describe('Only rows of this type.'),
    from: isoDateTime.optional(),
    to: isoDateTime.optional(),
    limit: queryInt({ min: 1, max: 100, default: 50, describe: 'Page size, 1 to 100 (default 50).' }),
    cursor: z.string().max(512).optional().describe("The previous response's next_cursor, unchanged."),
  }),
  output: z.object({ data: z.array(ledgerItemSchema), next_cursor: z.string().nullable() }),
  errors: [...analyticsErrors, { status: 400, code: 'invalid_parameter', when: 'bad kind, limit, time or cursor' }],
  example: { kind: 'refund', limit: 20 },
  handler(input, ctx) {
    const pid = requireAnalytics(ctx);
    const rows = ctx.services.revenue.list(pid, {
      kind: input.kind,
      from: input.from ? Date.parse(input.from) : undefined,
      to: input.to ? Date.parse(input.to) : undefined,
      cursor: input.cursor ? decodeCursor(input.cursor) : undefined,
      limit: input.limit + 1,
    });
    const page = rows.slice(0, input.limit);
    return { data: page.map(ledgerOut), next_cursor: rows.length > input.limit ? encodeCursor(page[page.length - 1]!) : null };
  },
});

const eventItem = z.strictObject({
  id: text(256).describe("Your id; sending it again replaces the earlier send."),
  type: z.enum(LEDGER_TYPES),
  amount: z.number().int().positive().max(Number.MAX_SAFE_INTEGER).describe('Positive integer in the smallest currency unit; `type` sets the sign.'),
  currency: currencyCode,
  occurred_at: isoDateTime.describe('At most one day in the future.'),
  customer_id: text(256).optional(),
  distinct_id: text(256).optional().describe('The user id passed to identify(): links revenue to the person.'),
  anonymous_id: text(256).optional().describe('Visitor id of a visitor not signed in.'),
  parent_id: text(256).optional().describe('For a refund or dispute: the id of its payment.'),
  subscription_id: text(256).optional(),
  plan: text(256).optional(),
  recurring: z.boolean().optional(),
  status: z.enum(LEDGER_STATUSES).optional().describe('`posted` (default) or `voided` (does not count).'),
});

export const sendEvents = defineOperation({
  operationId: 'revenue.sendEvents',
  tag: 'revenue',
  summary: 'Send ledger events (payments, refunds, disputes, reversals)',
  description:
    'Writes up to 100 ledger events. Sending an id again replaces the earlier row (an identical re-send writes nothing). `amount` is positive; refunds and disputes count negative, dispute reversals positive; `voided` rows are kept but do not count. Answers 202 with `accepted` (items taken) and `written` (rows created or changed), after commit.',
  method: 'POST',
  path: `${P}/events`,
  scopes: ['revenue:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  successStatus: 202,
  input: z.strictObject({ project_id: projectId, events: z.array(eventItem).min(1).max(100) }),
  output: z.object({ accepted: z.number().int(), written: z.number().int() }),
  errors: [...analyticsErrors, { status: 400, code: 'invalid_parameter', when: 'bad item, more than 100 items, occurred_at more than a day ahead' }],
  example: { events: [{ id: 'pay_1001', type: 'payment', amount: 4900, currency: 'USD', occurred_at: '2026-01-15T10:00:00Z', distinct_id: 'user_42', plan: 'pro' }] },
  async handler(input, ctx) {
    const pid = requireAnalytics(ctx);
    const now = ctx.now();
    const rows = input.events.map((e, i) => {
      const at = Date.parse(e.occurred_at);
      if (at > now + MAX_FUTURE_MS) throw new ValidationError('`occurred_at` is more than one day in the future.', `events.${i}.occurred_at`);
      return toLedgerRow({ ...e, occurred_at: at }, 'api');
    });
    const written = await ctx.services.writeBatch(() => ctx.services.revenue.writeLedger(pid, rows, now));
    if (written) ctx.services.revenueCache.bump(pid);
    return { accepted: rows.length, written };
  },
});

const subscriptionItem = z.strictObject({
  id: text(256).describe('Subscription id.'),
  status: text(64).describe('Your status word (e.g. active, trialing, past_due, canceled).'),
  mrr: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).describe('Monthly amount in the smallest currency unit; 0 when not paying.'),
  currency: currencyCode,
  effective_at: isoDateTime.describe('When this state took effect; each state is kept (same id and time replaces).'),
  customer_id: text(256).optional(),
  plan: text(256).optional(),
});

export const sendSubscriptions = defineOperation({
  operationId: 'revenue.sendSubscriptions',
  tag: 'revenue',
  summary: 'Send subscription states (kept for MRR movements)',
  description:
    'Records up to 100 subscription states. Every state is kept, keyed by subscription id and `effective_at` (re-sending the same pair replaces it), so MRR and its movements work for any range. Answers 202 with `accepted` and `written`.',
  method: 'POST',
  path: `${P}/subscriptions`,
  scopes: ['revenue:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  successStatus: 202,
  input: z.strictObject({ project_id: projectId, subscriptions: z.array(subscriptionItem).min(1).max(100) }),
  output: z.object({ accepted: z.number().int(), written: z.number().int() }),
  errors: [...analyticsErrors, { status: 400, code: 'invalid_parameter', when: 'bad item, more than 100 items, effective_at more than a day ahead' }],
  example: { subscriptions: [{ id: 'sub_7', status: 'active', mrr: 4900, currency: 'USD', effective_at: '2026-01-01T00:00:00Z', plan: 'pro' }] },
  async handler(input, ctx) {
    const pid = requireAnalytics(ctx);
    const now = ctx.now();
    const rows = input.subscriptions.map((s, i) => {
      const at = Date.parse(s.effective_at);
      if (at > now + MAX_FUTURE_MS) throw new ValidationError('`effective_at` is more than one day in the future.', `subscriptions.${i}.effective_at`);
      return { id: s.id, status: s.status, mrr: s.mrr, currency: s.currency, effective_at: at, customer_id: s.customer_id ?? null, plan: s.plan ?? null, source: 'api' };
    });
    const written = await ctx.services.writeBatch(() => ctx.services.revenue.writeSubscriptions(pid, rows, now));
    if (written) ctx.services.revenueCache.bump(pid);
    return { accepted: rows.length, written };
  },
});

const settingsSchema = z.object({
  currency: z.string().describe('Reporting currency of converted amounts (default USD).'),
  fx: z.object({ source: z.string(), date: z.string(), currencies: z.array(z.string()).describe('Currencies with a reference rate.') }),
});
const settingsOut = (currency: string) => ({ currency, fx: { source: FX_TABLE.source, date: FX_TABLE.date, currencies: Object.keys(FX_TABLE.rates).sort() } });

export const getSettings = defineOperation({
  operationId: 'revenue.getSettings',
  tag: 'revenue',
  summary: 'Revenue settings: the reporting currency',
  description: 'The reporting currency of converted amounts (default USD) and the bundled reference-rate table it converts with (source, date, currencies).',
  method: 'GET',
  path: `${P}/settings`,
  scopes: ['revenue:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId }),
  output: settingsSchema,
  errors: [...analyticsErrors],
  example: {},
  handler(_input, ctx) {
    const pid = requireAnalytics(ctx);
    return settingsOut(reportingCurrency(ctx, pid));
  },
});

export const updateSettings = defineOperation({
  operationId: 'revenue.updateSettings',
  tag: 'revenue',
  summary: 'Set the reporting currency',
  description: 'Sets `currency`, the reporting currency of every converted amount. It must have a reference rate. Cached results are dropped.',
  method: 'PUT',
  path: `${P}/settings`,
  scopes: ['revenue:write'],
  risk: 'write',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId, currency: currencyCode }),
  output: settingsSchema,
  errors: [...analyticsErrors, { status: 400, code: 'invalid_parameter', when: 'not a currency with a reference rate' }],
  example: { currency: 'EUR' },
  handler(input, ctx) {
    const pid = requireAnalytics(ctx);
    if (!hasRate(input.currency)) throw new ValidationError(`\`currency\` ${input.currency} has no reference rate; use one of ${Object.keys(FX_TABLE.rates).sort().join(', ')}.`, 'currency');
    ctx.services.revenue.setCurrency(pid, input.currency, ctx.now());
    ctx.services.revenueCache.bump(pid);
    return settingsOut(input.currency);
  },
});

export const status = defineOperation({
  operationId: 'revenue.status',
  tag: 'revenue',
  summary: 'Revenue setup check: provider, webhook, backfill, rows, links to people, rates',
  description:
    'What is connected and flowing: the payment provider (never its key), the webhook URL and whether its signing secret is set, the last webhook event, backfill progress, ledger rows by source, how many rows link to a person (distinct_id or anonymous_id), subscription states, and the reference rates (date, currencies seen without a rate).',
  method: 'GET',
  path: `${P}/status`,
  scopes: ['revenue:read'],
  risk: 'read',
  sensitive: false,
  projectScoped: true,
  input: z.strictObject({ project_id: projectId }),
  output: z.object({
    provider: z.object({ name: z.string(), connected: z.boolean(), key_hint: z.string().nullable(), connected_at: z.string().nullable() }).nullable(),
    webhook: z.object({ url: z.string(), secret_set: z.boolean(), last_event_at: z.string().nullable(), events_received: z.number().int() }),
    backfill: z.object({
      state: z.enum(['idle', 'running', 'done', 'failed']),
      started_at: z.string().nullable(),
      finished_at: z.string().nullable(),
      pages: z.number().int(),
      rows: z.number().int(),
      error: z.string().nullable(),
    }),
    rows: z.object({ total: z.number().int(), by_source: z.record(z.string(), z.number().int()) }),
    subscriptions: z.object({ subscriptions: z.number().int(), states: z.number().int() }),
    person_links: z.object({ linked: z.number().int(), unlinked: z.number().int(), percent: z.number() }),
    rates: z.object({ source: z.string(), date: z.string(), reporting_currency: z.string(), missing_currencies: z.array(z.string()) }),
  }),
  errors: [...analyticsErrors],
  example: {},
  handler(_input, ctx) {
    const pid = requireAnalytics(ctx);
    const repo = ctx.services.revenue;
    const conn = repo.connection(pid);
    const counts = repo.counts(pid);
    const cur = reportingCurrency(ctx, pid);
    const b = conn?.backfill ?? { state: 'idle' as const };
    return {
      provider: conn && conn.key_sealed ? { name: conn.provider, connected: true, key_hint: conn.key_hint, connected_at: toIso(conn.connected_at) } : null,
      webhook: {
        url: `${ctx.services.config.ingestUrl}/payments/stripe/${pid}`,
        secret_set: !!conn?.webhook_secret_sealed,
        last_event_at: toIso(conn?.last_event_at ?? null),
        events_received: conn?.events_received ?? 0,
      },
      backfill: { state: b.state, started_at: toIso(b.started_at), finished_at: toIso(b.finished_at), pages: b.pages ?? 0, rows: b.rows ?? 0, error: b.error ?? null },
      rows: { total: counts.rows, by_source: counts.bySource },
      subscriptions: { subscriptions: counts.subscriptions, states: counts.subscriptionStates },
      person_links: { linked: counts.linked, unlinked: counts.rows - counts.linked, percent: counts.rows ? Math.round((counts.linked / counts.rows) * 10000) / 100 : 0 },
      rates: { source: FX_TABLE.source, date: FX_TABLE.date, reporting_currency: cur, missing_currencies: repo.knownCurrencies(pid).filter((c) => !hasRate(c)).sort() },
    };
  },
});
