/**
 * Issue 20: CPU of the ClickHouse log reads (src/storage/clickhouse/logs-read.ts) over N log records
 * spread over a day: in-process on chdb (ClickHouse 26; the CPU is this process's), or with SERVER=1
 * on a private clickhouse-server 18.16 (test/support/clickhouse.ts; its CPU read from /proc).
 * `npx tsx bench/clickhouse-logs-read.ts` (N=300000 by default). Prints the load average beside
 * each figure: wall-clock time is not measured.
 */
import { createChdbEngine, startClickHouseServer } from '../test/support/clickhouse.js';
import { createHttpEngine } from '../src/storage/clickhouse/client.js';
import { readFileSync, readdirSync } from 'node:fs';
import { migrateClickHouse } from '../src/storage/clickhouse/schema.js';
import { logRow, nextLogId } from '../src/storage/clickhouse/log-store.js';
import { createChLogsReader } from '../src/storage/clickhouse/logs-read.js';
import { loadavg } from 'node:os';
const N = Number(process.env.N ?? 300000);
const T = 1.78e12;
const srv = process.env.SERVER ? await startClickHouseServer() : null;
const engine = srv ? createHttpEngine(`${srv.url}/bench`) : createChdbEngine();
const serverPid = srv ? readdirSync('/proc').filter((d) => /^\d+$/.test(d)).find((d) => { try { const st = readFileSync(`/proc/${d}/stat`, 'utf8'); return st.includes('(clickhouse-serv') && Number(st.split(') ')[1]!.split(' ')[1]) === process.pid; } catch { return false; } }) : null;
if (srv) console.log('server pid', serverPid);
const ticks = () => { if (!serverPid) return 0; const f = readFileSync(`/proc/${serverPid}/stat`, 'utf8').split(') ')[1]!.split(' '); return (Number(f[11]) + Number(f[12])) * 10; };
await migrateClickHouse(engine);
const words = ['timeout', 'connection', 'reset', 'GET', 'orders', 'completed', 'user', 'payment', 'declined', 'cache', 'miss'];
for (let b = 0; b < N; b += 20000) {
  const rows = Array.from({ length: Math.min(20000, N - b) }, (_, k) => {
    const i = b + k;
    const body = `${words[i % 11]} ${words[(i * 7) % 11]} /orders/${i} in ${i % 300} ms user u${i % 97}`;
    return logRow(1, { resource: { 'service.name': `s${i % 5}`, 'host.name': `h${i % 20}` }, scope: { name: 'app', version: '', attributes: {} }, service_name: `s${i % 5}`, time_ms: T - (N - i) * (86_400_000 / N), observed_time_ms: T, severity_number: [9, 13, 17][i % 3]!, severity_text: '', body, attributes: { 'http.route': '/orders/{id}', 'user.id': `u${i % 97}`, payload: 'x'.repeat(200) }, trace_id: null, span_id: null, flags: 0, event_name: '' } as never, 'otlp', 0, null, nextLogId());
  });
  await engine.insert('logs', rows);
}
await engine.command('OPTIMIZE TABLE logs FINAL');
const cols = await engine.query<{ name: string; c: number }>("SELECT name, data_compressed_bytes AS c FROM system.columns WHERE database = currentDatabase() AND table = 'logs' ORDER BY c DESC");
const all = cols.reduce((x, c) => x + Number(c.c), 0);
console.log(`compressed bytes per record: ${(all / N).toFixed(1)} in all; ${cols.slice(0, 8).map((c) => `${c.name} ${(Number(c.c) / N).toFixed(1)}`).join(', ')}`);
const r = createChLogsReader(engine);
const f = { fromMs: T - 86_400_000, toMs: T };
const cases: [string, () => Promise<unknown>][] = [
  ['search limit 100', () => r.search('1', f, { limit: 100, offset: 0 })],
  ['search q=timeout', () => r.search('1', { ...f, match: '"timeout"' }, { limit: 100, offset: 0 })],
  ['search service=s1 offset 5000', () => r.search('1', { ...f, service: 's1' }, { limit: 100, offset: 5000 })],
  ['newest 10000 (insights)', () => r.newest('1', f, 10000)],
  ['counts level by 5m', () => r.counts('1', f, ['level'], { firstMs: T - 86_400_000, stepMs: 300_000 })],
];
for (const [name, fn] of cases) {
  await fn();
  const c = process.cpuUsage();
  const t0 = ticks();
  for (let k = 0; k < 5; k++) await fn();
  const d = process.cpuUsage(c);
  console.log(`${name.padEnd(32)} ${((d.user + d.system) / 5 / 1000).toFixed(1)} ms CPU here, ${((ticks() - t0) / 5).toFixed(0)} ms server CPU per call (N=${N}, load ${loadavg()[0]!.toFixed(1)})`);
}
await engine.close();
await srv?.stop();
process.exit(0);
