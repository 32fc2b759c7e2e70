import { startClickHouseServer } from '../test/support/clickhouse.js';
import { seeded } from './scale.js';
import { createHttpEngine } from '../src/storage/clickhouse/client.js';
const N = Number(process.argv[2] ?? 1000000);
const ch = await startClickHouseServer();
const url = `${ch.url}/ops_${Date.now()}`;
const s = await seeded(N, url);
console.log('seeded', s.seedSeconds.toFixed(0), 's; base', s.base, 'key', s.admin, 'project', s.project, 'ch', url);
const e = createHttpEngine(url);
const NOW = Date.UTC(2026, 10, 20, 12, 0, 0);
const W = `project_id = 1 AND start_ms >= ${NOW - 86400000} AND start_ms < ${NOW}`;
const qs = `from=${encodeURIComponent(new Date(NOW - 86400000).toISOString())}&to=${encodeURIComponent(new Date(NOW).toISOString())}`;
const time = async (label: string, q: string) => {
  const ts: number[] = [];
  for (let i = 0; i < 5; i++) { const t = performance.now(); await e.query(q); ts.push(performance.now() - t); }
  ts.sort((a, b) => a - b);
  console.log(label.padEnd(40), ts.map((x) => x.toFixed(0)).join(' '));
};
await time('count entry_spans', `SELECT count() FROM entry_spans WHERE ${W}`);
await time('groups counts', `SELECT service_name, operation, count(), countIf(status_code = 2) FROM entry_spans WHERE ${W} GROUP BY service_name, operation`);
await time('groups sort', `SELECT service_name, operation, length(s) FROM (SELECT service_name, operation, arraySort(groupArray(duration_ms)) AS s FROM entry_spans WHERE ${W} GROUP BY service_name, operation)`);
await time('groups groupArray only', `SELECT service_name, operation, length(s) FROM (SELECT service_name, operation, groupArray(duration_ms) AS s FROM entry_spans WHERE ${W} GROUP BY service_name, operation)`);
await time('groups quantileExact', `SELECT service_name, operation, quantileExact(0.5)(duration_ms), quantileExact(0.95)(duration_ms) FROM entry_spans WHERE ${W} GROUP BY service_name, operation`);
await time('spark', `SELECT service_name, operation, toInt64(floor((start_ms - ${NOW - 86400000}) * 60 / 86400000)) AS bk, count() FROM entry_spans WHERE ${W} GROUP BY service_name, operation, bk`);
await time('spans count window', `SELECT count() FROM spans WHERE ${W}`);
const t0 = performance.now();
const r = await fetch(`${s.base}/v1/projects/${s.project}/trace-operations?${qs}`, { headers: { 'x-service-key': s.admin } });
await r.text();
console.log('GET operations', (performance.now() - t0).toFixed(0), r.status);
for (let i = 0; i < 3; i++) { const t = performance.now(); await (await fetch(`${s.base}/v1/projects/${s.project}/trace-operations?${qs}`, { headers: { 'x-service-key': s.admin } })).text(); console.log('GET operations', (performance.now() - t).toFixed(0)); }
for (let i = 0; i < 3; i++) { const t = performance.now(); await (await fetch(`${s.base}/v1/projects/${s.project}/services?${qs}`, { headers: { 'x-service-key': s.admin } })).text(); console.log('GET service-map', (performance.now() - t).toFixed(0)); }
await e.close(); await s.close(); await ch.stop();
