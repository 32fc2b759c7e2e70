/**
 * Where a `revenue.attribution` read spends its time, in process on a file seeded by bench/revenue.ts
 * (`--db`), CPU and wall ms per read: the ledger side (packedRows), the touches (packedTouches) and the
 * sweep. Variants alternate read by read on the same file, with results checked equal:
 *  - `kept`: one repository for every read, as a server process has (decoded days kept, migration 048);
 *  - `cold`: a new repository per read (nothing kept: every day decoded from its blob);
 *  - `old`: with `--old MODULE`, another build's revenue repository module (e.g. a copy of the previous
 *    src/storage/revenue-repo.ts placed beside it), one instance for every read.
 *
 *   npx tsx bench/revenue-attr-profile.ts <bench.db> [--runs 10] [--days 365] [--lookback 30] [--old ./src/storage/revenue-repo-old.ts]
 */
import { parseArgs, isDeepStrictEqual } from 'node:util';
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { openDatabase } from '../src/storage/db.js';
import { createRevenueRepo } from '../src/storage/revenue-repo.js';
import { createAnalyticsRepo } from '../src/storage/analytics-repo.js';
import { toMajor } from '../src/domain/revenue/fx.js';
import { attributePacked, Scratch } from '../src/domain/revenue/attribution-fast.js';

const { values: o, positionals } = parseArgs({
  allowPositionals: true,
  options: { runs: { type: 'string', default: '10' }, days: { type: 'string', default: '365' }, lookback: { type: 'string', default: '30' }, old: { type: 'string' } },
});
const DAY = 86_400_000;
const db = openDatabase(positionals[0]!);
type Repo = Pick<ReturnType<typeof createRevenueRepo>, 'packedRows'>;
const kept = createRevenueRepo(db);
const analytics = createAnalyticsRepo(db);
const variants: [string, () => Repo][] = [
  ['kept', () => kept],
  ['cold', () => createRevenueRepo(db)],
];
if (o.old) {
  const mod = (await import(pathToFileURL(resolve(o.old)).href)) as { createRevenueRepo: (d: typeof db) => Repo };
  const old = mod.createRevenueRepo(db);
  variants.push(['old', () => old]);
}
const pid = String(db.prepare('SELECT project_id FROM revenue_events LIMIT 1').pluck().get());
const end = (db.prepare('SELECT MAX(occurred_at) FROM revenue_events').pluck().get() as number) + 1;
const cur = 'USD';
const L = Number(o.lookback) * DAY;
const opts = { model: 'last_touch' as const, dimension: 'source' as const, lookbackMs: L, maxTouchRows: 100, round: (v: number) => toMajor(v, cur) };
const scratch = new Scratch();
const parts = new Map<string, { cpu: number[]; wall: number[] }>();
function time<T>(name: string, f: () => T): T {
  const c = process.cpuUsage();
  const t = performance.now();
  const r = f();
  const w = performance.now() - t;
  const cu = process.cpuUsage(c);
  let p = parts.get(name);
  if (!p) parts.set(name, (p = { cpu: [], wall: [] }));
  p.cpu.push((cu.user + cu.system) / 1000);
  p.wall.push(w);
  return r;
}
function read(v: string, repo: Repo, from: number, to: number) {
  return time(`${v}: total`, () => {
    const { rows } = time(`${v}: packedRows`, () => repo.packedRows(pid, from, to, cur, new Set(), scratch));
    const touches = time(`${v}: packedTouches`, () => analytics.packedTouches(pid, from - L, to, 'source', scratch));
    return time(`${v}: sweep`, () => {
      let persons = 0;
      for (let i = 0; i < rows.n; i++) persons = Math.max(persons, rows.person[i]! + 1);
      for (let i = 0; i < touches.n; i++) persons = Math.max(persons, touches.person[i]! + 1);
      return attributePacked(rows, touches, persons, opts, scratch);
    });
  });
}
// Warm-up: statements, key strings, person indexes (as earlier reads of a server process do) and the kept days.
for (const [v, r] of variants) read(`warm-up ${v}`, r(), end - Number(o.days) * DAY, end);
parts.clear();
console.log(`load ${loadavg().map((l) => l.toFixed(1)).join(' ')}; ${o.days} days, lookback ${o.lookback} days, ${o.runs} reads per variant`);
for (let i = 0; i < Number(o.runs); i++) {
  const to = end - (i + 1) * 60_000;
  const from = to - Number(o.days) * DAY;
  const results = variants.map(([v, r]) => read(v, r(), from, to));
  for (const x of results) if (!isDeepStrictEqual(x, results[0])) throw new Error('results differ');
}
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil((p / 100) * xs.length) - 1)]!;
console.log('| variant: part | CPU ms p50 | wall ms p50 | wall ms p95 |\n|---|---|---|---|');
for (const [k, v] of [...parts].sort((a, b) => (a[0] < b[0] ? -1 : 1))) console.log(`| ${k} | ${pct(v.cpu, 50).toFixed(0)} | ${pct(v.wall, 50).toFixed(0)} | ${pct(v.wall, 95).toFixed(0)} |`);
console.log(`load ${loadavg().map((l) => l.toFixed(1)).join(' ')}; results equal on every read`);
