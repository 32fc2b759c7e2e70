/**
 * The hourly entry-span tallies behind observability.summary's slowest operations (migration 054):
 * what they cost per span written, and what they save per read.
 *
 * Writes: the bench/scaling.ts trace shape (6 spans, 2 of them entry spans), 512 spans per batch,
 * into two fresh files, one through the plain SQLite writer and one through the tallies, batches
 * alternated; CPU µs per span.
 *
 * Reads (with `--db FILE`, e.g. a file kept by `BENCH_KEEP_DB=1 npx tsx bench/scaling.ts`): the
 * slowest operations read from every entry span and from the tallies, alternated in one process, for
 * a 24 h window on hour boundaries, one with its edges inside hours, one hour, and 6 h of one
 * environment; the answers are compared, CPU medians printed.
 *
 *   npx tsx bench/operation-rollups.ts [--batches 400] [--db FILE] [--runs 9]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { openDatabase } from '../src/storage/db.js';
import { createSqliteTelemetryWriter } from '../src/storage/sqlite-telemetry-store.js';
import { withOperationRollups } from '../src/storage/operation-rollups.js';
import { createSightline } from '../src/server.js';
import { slowestFromSpans, slowestFromTallies } from '../operations/observability.js';
import { DAY, FROM, NOW, int, sixSpanTrace } from './seed-data.js';
import type { SpanRecord } from '../src/domain/telemetry-types.js';

const { values: opts } = parseArgs({ options: { batches: { type: 'string' }, db: { type: 'string' }, runs: { type: 'string' } } });
const BATCHES = Number(opts.batches ?? 400);
const RUNS = Number(opts.runs ?? 9);
const load = () => loadavg().map((x) => x.toFixed(2)).join(' ');
const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;
const cpuMs = (c: NodeJS.CpuUsage) => (c.user + c.system) / 1000;


function writes() {
  const dir = mkdtempSync(join(tmpdir(), 'sl-bench-oprollups-'));
  try {
    const mk = (name: string) => {
      const db = openDatabase(join(dir, name));
      db.prepare("INSERT INTO organizations (id, name, created_at) VALUES ('o', 'Org', 0)").run();
      db.prepare("INSERT INTO projects (id, org_id, name, slug, created_at) VALUES (1, 'o', 'web', 'web', 0)").run();
      return db;
    };
    const dbs = { plain: mk('plain.db'), tallies: mk('tallies.db') };
    const writers = { plain: createSqliteTelemetryWriter(dbs.plain), tallies: withOperationRollups(dbs.tallies, createSqliteTelemetryWriter(dbs.tallies)) };
    const cpu = { plain: 0, tallies: 0 };
    let n = 0;
    for (let i = 0; i < BATCHES; i++) {
      const t = FROM + (i / BATCHES) * DAY;
      const spans: SpanRecord[] = [];
      while (spans.length < 512) spans.push(...sixSpanTrace(t + int(DAY / BATCHES), { fractional: true }));
      const batch = spans.slice(0, 512);
      n += batch.length;
      for (const k of (i % 2 ? ['tallies', 'plain'] : ['plain', 'tallies']) as ('plain' | 'tallies')[]) {
        const c0 = process.cpuUsage();
        writers[k].insertSpans('1', batch, 'otlp', t);
        cpu[k] += cpuMs(process.cpuUsage(c0));
      }
    }
    for (const db of Object.values(dbs)) db.close();
    const us = (k: 'plain' | 'tallies') => (cpu[k] * 1000) / n;
    console.log(
      `writes, ${n.toLocaleString('en')} spans each, alternated batches: plain ${us('plain').toFixed(2)} µs CPU per span, with tallies ${us('tallies').toFixed(2)} ` +
        `(+${((us('tallies') / us('plain') - 1) * 100).toFixed(0)} %); load average ${load()}`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function reads(file: string) {
  const s = createSightline({ dbFile: file, port: 0, host: '127.0.0.1', logLevel: 'warn' }, { now: () => NOW });
  try {
    const pid = String(s.db.prepare('SELECT min(id) FROM projects').pluck().get());
    const windows: [string, number, number, string | undefined][] = [
      ['24 h, whole hours', FROM, NOW, undefined],
      ['24 h, edges inside hours', FROM + 17 * 60_000 + 3_000, NOW - 23 * 60_000, undefined],
      ['1 h', NOW - 3_600_000, NOW, undefined],
      ['6 h, environment=production', NOW - 6 * 3_600_000, NOW, 'production'],
    ];
    const { groups } = await s.services.tracesRead.entryGroups(pid, { max: 200 });
    for (const [label, fromMs, toMs, environment] of windows) {
      const f = { fromMs, toMs, environment };
      const same = JSON.stringify(await slowestFromSpans(s.services.tracesRead, pid, groups, f)) === JSON.stringify(slowestFromTallies(s.services.operationRollups, pid, groups, f));
      const t = { spans: [] as number[], tallies: [] as number[] };
      for (let i = 0; i < RUNS; i++) {
        for (const k of (i % 2 ? ['tallies', 'spans'] : ['spans', 'tallies']) as ('spans' | 'tallies')[]) {
          const c0 = process.cpuUsage();
          if (k === 'spans') await slowestFromSpans(s.services.tracesRead, pid, groups, f);
          else slowestFromTallies(s.services.operationRollups, pid, groups, f);
          t[k].push(cpuMs(process.cpuUsage(c0)));
        }
      }
      console.log(
        `slowest operations, ${label} (${groups.length} groups): same answer ${same}; every entry span ${med(t.spans).toFixed(1)} ms CPU median, ` +
          `tallies ${med(t.tallies).toFixed(1)} ms; ${RUNS} alternated runs; load average ${load()}`,
      );
    }
  } finally {
    await s.close();
  }
}

writes();
if (opts.db) await reads(opts.db);
