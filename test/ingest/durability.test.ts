import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolve(port));
    });
  });
}

function startServer(db: string, port: number): { child: ChildProcess; output: Promise<string> } {
  const child = spawn(process.execPath, [join(ROOT, 'bin/sightline.mjs'), 'start'], {
    cwd: ROOT,
    env: { ...process.env, SIGHTLINE_DB: db, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  const output = new Promise<string>((resolve) => child.on('exit', () => resolve(out)));
  (child as ChildProcess & { out: () => string }).out = () => out;
  return { child, output };
}

async function waitReady(port: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      const r = await fetch(`http://127.0.0.1:${port}/`);
      if (r.ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error('server did not start');
}

const children: ChildProcess[] = [];
afterAll(() => {
  for (const c of children) c.kill('SIGKILL');
});

describe('ingest durability', () => {
  it('keeps every acknowledged event, without duplicates, across a SIGKILL during sustained ingest', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'sightline-durability-'));
    const db = join(dir, 'd.db');
    const port = await freePort();
    const first = startServer(db, port);
    children.push(first.child);
    await waitReady(port);
    const banner = (first.child as ChildProcess & { out: () => string }).out();
    const key = /ingest key\s+(sl_[0-9a-f]+)/.exec(banner)?.[1];
    expect(key).toBeTruthy();
    const url = (id: string) => `http://127.0.0.1:${port}/ingest/api/1/store/?sentry_key=${key}&n=${id}`;

    const acknowledged = new Set<string>();
    let seq = 0;
    let stop = false;
    // Four concurrent senders, like SDK transports under load; each event id is sent until stop.
    const sender = async () => {
      while (!stop) {
        const id = (seq++).toString(16).padStart(32, '0');
        try {
          const r = await fetch(url(id), {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ event_id: id, message: `durability probe ${id}`, level: 'error', timestamp: Date.now() / 1000 }),
          });
          if (r.status === 200) acknowledged.add(id);
        } catch {
          return; // connection refused / reset: the server is gone
        }
      }
    };
    const senders = Array.from({ length: 4 }, sender);
    while (acknowledged.size < 400) await new Promise((r) => setTimeout(r, 10));
    first.child.kill('SIGKILL');
    await first.output;
    stop = true;
    await Promise.all(senders);

    // Restart on the same file: start-up must succeed (WAL recovery) and serve.
    const second = startServer(db, port);
    children.push(second.child);
    await waitReady(port);
    second.child.kill('SIGTERM');
    await second.output;

    const conn = new Database(db, { readonly: true });
    const rows = conn.prepare('SELECT event_id FROM error_events WHERE project_id = 1').all() as { event_id: string }[];
    const stored = new Set(rows.map((r) => r.event_id));
    const missing = [...acknowledged].filter((id) => !stored.has(id));
    expect(missing).toEqual([]);
    expect(rows.length).toBe(stored.size);
    // Group counters were committed with their events: they add up to the stored events exactly.
    const count = conn.prepare('SELECT SUM(event_count) AS n FROM error_groups WHERE project_id = 1').get() as { n: number };
    expect(count.n).toBe(rows.length);
    expect(conn.pragma('integrity_check', { simple: true })).toBe('ok');
    conn.close();
  }, 60_000);
});
