/**
 * Where a 365-day `revenue.attribution` read spends its time, in process on a file seeded by
 * bench/revenue.ts (`--db`): the day-blob query alone, packedRows, packedTouches and the sweep, CPU and
 * wall ms per read.
 *
 *   npx tsx bench/revenue-attr-profile.ts <bench.db> [--runs 10] [--days 365] [--lookback 30]
 */
import { parseArgs } from 'node:util';
import { loadavg } from 'node:os';
import { openDatabase } from '../src/storage/db.js';
import { createRevenueRepo } from '../src/storage/revenue-repo.js';
import { createAnalyticsRepo } from '../src/storage/analytics-repo.js';
import { toMajor } from '../src/domain/revenue/fx.js';
import { attributePacked, Scratch } from '../src/domain/revenue/attribution-fast.js';

const { values: o, positionals } = parseArgs({ allowPositionals: true, options: { runs: { type: 'string', default: '10' }, days: { type: 'string', default: '365' }, lookback: { type: 'string', default: '30' } } });
const DAY = 86_400_000;
const db = openDatabase(positionals[0]!);
const revenue = createRevenueRepo(db);
const analytics = createAnalyticsRepo(db);
const pid = String(db.prepare('SELECT project_id FROM revenue_events LIMIT 1').pluck().get());
const end = (db.prepare('SELECT MAX(occurred_at) FROM revenue_events').pluck().get() as number) + 1;
const cur = 'USD';
const L = Number(o.lookback) * DAY;
const opts = { model: 'last_touch' as const, dimension: 'source' as const, lookbackMs: L, maxTouchRows: 100, round: (v: number) => toMajor(v, cur) };
const scratch = new Scratch();
const blobs = db.prepare('SELECT day, rows FROM revenue_day_rows WHERE project_id = ? AND day >= ? AND day < ? ORDER BY day').raw(true);
const tblobs = db.prepare('SELECT day, touches FROM analytics_touch_days WHERE project_id = ? AND day >= ? AND day <= ? ORDER BY day').raw(true);
const parts: Record<string, { cpu: number[]; wall: number[] }> = {};
function time<T>(name: string, f: () => T): T {
  const c = process.cpuUsage();
  const t = performance.now();
  const r = f();
  const w = performance.now() - t;
  const cu = process.cpuUsage(c);
  (parts[name] ??= { cpu: [], wall: [] }).cpu.push((cu.user + cu.system) / 1000);
  parts[name]!.wall.push(w);
  return r;
}
console.log(`load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
for (let i = 0; i < Number(o.runs); i++) {
  const to = end - i * 60_000;
  const from = to - Number(o.days) * DAY;
  time('total', () => {
    time('sql ledger blobs only', () => blobs.all(Number(pid), Math.floor(from / DAY) * DAY, to));
    time('sql touch blobs only', () => tblobs.all(Number(pid), Math.floor((from - L) / DAY) * DAY, to));
    const { rows } = time('packedRows', () => revenue.packedRows(pid, from, to, cur, new Set(), scratch));
    const touches = time('packedTouches', () => analytics.packedTouches(pid, from - L, to, 'source', scratch));
    let persons = 0;
    for (let i = 0; i < rows.n; i++) persons = Math.max(persons, rows.person[i]! + 1);
    for (let i = 0; i < touches.n; i++) persons = Math.max(persons, touches.person[i]! + 1);
    return time('sweep', () => attributePacked(rows, touches, persons, opts, scratch));
  });
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log('| part | CPU ms median | wall ms median | wall max |\n|---|---|---|---|');
for (const [k, v] of Object.entries(parts)) console.log(`| ${k} | ${med(v.cpu).toFixed(0)} | ${med(v.wall).toFixed(0)} | ${Math.max(...v.wall).toFixed(0)} |`);
console.log(`load ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
