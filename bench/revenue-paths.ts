/**
 * In-process comparison of the revenue read paths on a store seeded by bench/revenue.ts (`--db`):
 * the straightforward computation (ledger rows and touches read as SQL rows, `attribute` row by row,
 * COUNT(DISTINCT) for customers) and the fast paths the operations use (packed day rows, packed touch days,
 * attribution-fast.ts), interleaved so machine load hits both alike, and checked equal on every run.
 *
 *   npx tsx bench/revenue-paths.ts <bench.db> [--runs 10]
 */
import { parseArgs } from 'node:util';
import { loadavg } from 'node:os';
import { isDeepStrictEqual } from 'node:util';
import { openDatabase } from '../src/storage/db.js';
import { createRevenueRepo } from '../src/storage/revenue-repo.js';
import { createAnalyticsRepo } from '../src/storage/analytics-repo.js';
import { reportingMinorOf, toMajor } from '../src/domain/revenue/fx.js';
import { attribute } from '../src/domain/revenue/attribution.js';
import { attributePacked, Scratch } from '../src/domain/revenue/attribution-fast.js';

const { values: o, positionals } = parseArgs({ allowPositionals: true, options: { runs: { type: 'string', default: process.env.BENCH_RUNS ?? '10' } } });
const RUNS = Number(o.runs);
const DAY = 86_400_000;
const db = openDatabase(positionals[0]!);
const revenue = createRevenueRepo(db);
const analytics = createAnalyticsRepo(db);
const pid = String(db.prepare('SELECT project_id FROM revenue_events LIMIT 1').pluck().get());
const end = (db.prepare('SELECT MAX(occurred_at) FROM revenue_events').pluck().get() as number) + 1;
const cur = 'USD';
const L = 30 * DAY;
const opts = { model: 'last_touch' as const, dimension: 'source' as const, lookbackMs: L, maxTouchRows: 100, round: (v: number) => toMajor(v, cur) };

function slow(from: number, to: number) {
  const rows = revenue.attributableRows(pid, from, to, reportingMinorOf(cur), new Set());
  const touches = analytics.touchesByPerson(pid, from - L, to);
  return { attribution: attribute(rows, (p) => touches.get(p) ?? [], opts), customers: revenue.customersFromLedger(pid, from, to) };
}
/** Reused arrays, as the operation keeps them (attribution-fast.ts Scratch). */
const scratch = new Scratch();
function fast(from: number, to: number) {
  const { rows } = revenue.packedRows(pid, from, to, cur, new Set(), scratch);
  const touches = analytics.packedTouches(pid, from - L, to, 'source', scratch);
  let persons = 0;
  for (let i = 0; i < rows.n; i++) persons = Math.max(persons, rows.person[i]! + 1);
  for (let i = 0; i < touches.n; i++) persons = Math.max(persons, touches.person[i]! + 1);
  return { attribution: attributePacked(rows, touches, persons, opts, scratch), customers: revenue.customers(pid, from, to) };
}
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]!;
fast(end - DAY, end); // warms the statements and the person indexes, as earlier reads of a server process do
console.log(`load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
console.log('| range | straightforward p50 / p95 ms | fast p50 / p95 ms | p50 ratio |\n|---|---|---|---|');
for (const days of [30, 365]) {
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const to = end - i * 3_600_000;
    const from = to - days * DAY;
    let t = performance.now();
    const x = slow(from, to);
    a.push(performance.now() - t);
    t = performance.now();
    const y = fast(from, to);
    b.push(performance.now() - t);
    if (!isDeepStrictEqual(x, y)) throw new Error(`results differ for ${days} days`);
  }
  console.log(`| ${days} days | ${pct(a, 50).toFixed(0)} / ${pct(a, 95).toFixed(0)} | ${pct(b, 50).toFixed(0)} / ${pct(b, 95).toFixed(0)} | ${(pct(a, 50) / pct(b, 50)).toFixed(1)}× |`);
}
console.log(`load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
