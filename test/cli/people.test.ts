/**
 * The CLI as a person uses it, against a running server: default columns from the descriptors at two
 * terminal widths, relative times, --columns / --output, colour rules, charts for series, live tail
 * (records sent during the test, a failed poll caught up, Ctrl-C), and shell completion scripts.
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { sendEvent } from '../operations/errors-fixtures.js';
import { sendLogs, sendMetrics, SEV } from '../operations/telemetry-fixtures.js';
import { BIN, ROOT, runBin, runInProcess } from './helpers.js';

const T0 = Date.parse('2026-06-01T12:00:00.000Z');
const MIN = 60_000;
let t: TestServer;
let env: Record<string, string>;
const LONG_TITLE = 'a remarkably long exception message that will not fit in a narrow terminal at all';

beforeAll(async () => {
  t = await startTestServer({ now: () => T0 });
  const home = mkdtempSync(join(tmpdir(), 'sightline-home-'));
  env = { SIGHTLINE_URL: t.url, SIGHTLINE_API_KEY: t.keys.admin, HOME: home, XDG_CONFIG_HOME: home };
  for (let i = 0; i < 3; i++) await sendEvent(t, { type: 'TypeError', value: LONG_TITLE, fn: 'charge', service: 'checkout', at: T0 - (3 - i) * 10 * MIN });
  await sendEvent(t, { type: 'RangeError', value: 'bad size', fn: 'resize', service: 'worker', at: T0 - 2 * 60 * MIN });
  // An hour of logs: one info a minute, and a burst of errors 20 minutes ago.
  const logs = [];
  for (let m = 60; m >= 1; m--) logs.push({ at: T0 - m * MIN, body: `tick ${m}`, severity: SEV.info });
  for (let i = 0; i < 12; i++) logs.push({ at: T0 - 20 * MIN + i * 1000, body: `payment failed ${i}`, severity: SEV.error });
  await sendLogs(t, [{ resource: { service: 'checkout', environment: 'production' }, logs }]);
  await sendMetrics(t, [
    {
      resource: { service: 'checkout' },
      metrics: [{ name: 'queue.wait', unit: 'ms', gauge: Array.from({ length: 30 }, (_, i) => ({ at: T0 - (30 - i) * MIN, value: i < 20 ? 12 : 480 })) }],
    },
  ]);
});
afterAll(() => t.close());

const cli = (argv: string[], opts: { columns?: number; tty?: boolean; env?: Record<string, string> } = {}) =>
  runInProcess(argv, { ...env, ...opts.env }, { columns: opts.columns, tty: opts.tty, now: () => T0 });

describe('tables from the descriptors display hints', () => {
  it('errors list shows short id, title, events, last seen and status, titles getting the space', async () => {
    const wide = await cli(['errors', 'list'], { columns: 160 });
    expect(wide.code).toBe(0);
    const [header, ...rows] = wide.stdout.trimEnd().split('\n');
    expect(header!.split(/ {2,}/)).toEqual(['short_id', 'title', 'event_count', 'user_count', 'last_seen', 'status', 'level']);
    const checkout = rows.find((r) => r.includes('TypeError'))!;
    expect(checkout).toContain(LONG_TITLE);
    expect(checkout).toMatch(/ 3 +0 +10m ago +unresolved +error$/);
    expect(rows.find((r) => r.includes('RangeError'))).toMatch(/ 1 +0 +2h ago +unresolved/);
    // Fields left out by default are named, one flag away.
    expect(wide.stdout).toMatch(/\(not shown: id, type, .*--columns/);

    const narrow = await cli(['errors', 'list'], { columns: 80 });
    const lines = narrow.stdout.trimEnd().split('\n').filter((l) => !l.startsWith('total:') && !l.startsWith('(not shown'));
    expect(lines.every((l) => l.length <= 80)).toBe(true);
    expect(lines[0]!.split(/ {2,}/).slice(0, 5)).toEqual(['short_id', 'title', 'event_count', 'user_count', 'last_seen']);
    const cut = lines.find((l) => l.includes('TypeError'))!;
    expect(cut).toMatch(/…/);
    expect(cut).toMatch(/ 3 +0 +10m ago/);
  });

  it('--columns picks and orders the columns; an unknown one is a usage error naming the fields', async () => {
    const r = await cli(['errors', 'list', '--columns', 'event_count,type,first_seen'], { columns: 120 });
    expect(r.code).toBe(0);
    expect(r.stdout.split('\n')[0]!.split(/ {2,}/)).toEqual(['event_count', 'type', 'first_seen']);
    const bad = await cli(['errors', 'list', '--columns', 'nope']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--columns: no field "nope" in the answer \(fields: id, short_id, title/);
  });

  it('--output csv keeps ISO times and quotes fields; jsonl prints one row a line', async () => {
    const csv = await cli(['errors', 'list', '--output', 'csv', '--columns', 'short_id,title,last_seen']);
    expect(csv.code).toBe(0);
    const lines = csv.stdout.trimEnd().split('\r\n');
    expect(lines[0]).toBe('short_id,title,last_seen');
    expect(lines.find((l) => l.includes('TypeError'))).toMatch(/^[A-Z]+-\d+,TypeError: a remarkably .*,2026-06-01T11:50:00\.000Z$/);
    const jsonl = await cli(['errors', 'list', '--output', 'jsonl']);
    const rows = jsonl.stdout.trimEnd().split('\n').map((l) => JSON.parse(l));
    expect(rows).toHaveLength(2);
    expect(rows.map((r) => r.event_count).sort()).toEqual([1, 3]);
    expect(rows[0].last_seen).toMatch(/^2026-06-01T/);
  });

  it('colours a terminal only, and never with NO_COLOR', async () => {
    expect((await cli(['errors', 'list'], { tty: true, columns: 160 })).stdout).toContain('\x1b[');
    expect((await cli(['errors', 'list'], { tty: true, columns: 160, env: { NO_COLOR: '1' } })).stdout).not.toContain('\x1b[');
    expect((await cli(['errors', 'list'], { columns: 160 })).stdout).not.toContain('\x1b[');
  });

  it('--json is unchanged: the whole answer with ISO times', async () => {
    const r = await cli(['errors', 'list', '--json']);
    const body = JSON.parse(r.stdout);
    expect(body.data[0]).toHaveProperty('id');
    expect(body.data[0].last_seen).toMatch(/^2026-06-01T/);
  });
});

describe('charts for series', () => {
  it('logs histogram draws a line chart with count labels, the time axis and a legend per group', async () => {
    const from = new Date(T0 - 60 * MIN).toISOString();
    const to = new Date(T0).toISOString();
    const r = await cli(['logs', 'histogram', '--from', from, '--to', to, '--step', '1m'], { columns: 100 });
    expect(r.code).toBe(0);
    const lines = r.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^total 72 · step 1m · unit logs · 60 buckets/);
    expect(r.stdout).toMatch(/^ *13 [┤┼]/m); // the burst minute: 1 info + 12 errors
    expect(r.stdout).toMatch(/^ *0 [┤┼]/m);
    expect(r.stdout).toMatch(/^ +11:00 +11:59$/m);
    expect(r.stdout).toMatch(/times UTC$/m);
    expect(lines.every((l) => l.length <= 100)).toBe(true);

    const grouped = await cli(['logs', 'histogram', '--from', from, '--to', to, '--step', '1m', '--group-by', 'level'], { columns: 100 });
    expect(grouped.stdout).toMatch(/── info \(60 logs\) {3}── error \(12 logs\)$/m);
  });

  it('merges buckets to fit a narrow terminal, summing counts', async () => {
    const r = await cli(['logs', 'histogram', '--from', new Date(T0 - 60 * MIN).toISOString(), '--to', new Date(T0).toISOString(), '--step', '1m'], { columns: 40 });
    expect(r.stdout).toMatch(/60 buckets, 2 per column/);
    expect(r.stdout).toMatch(/^ *14 [┤┼]/m); // two minutes merged: 2 info + 12 errors
    expect(r.stdout.trimEnd().split('\n').every((l) => l.length <= 40)).toBe(true);
  });

  it('metrics timeline labels the axis with the metric unit', async () => {
    const r = await cli(['metrics', 'timeline', '--metric-name', 'queue.wait', '--metric-type', 'gauge', '--aggregation', 'avg', '--granularity', '1m', '--from', new Date(T0 - 30 * MIN).toISOString(), '--to', new Date(T0).toISOString()], { columns: 90 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.split('\n')[0]).toMatch(/^metric_name queue\.wait · aggregation avg · granularity 1m · unit ms/);
    expect(r.stdout).toMatch(/^ *480ms [┤┼]/m);
    expect(r.stdout).toMatch(/^ *12ms [┤┼]/m);
  });

  it('events latency prints its table and bars per percentile', async () => {
    const r = await cli(['events', 'latency'], { columns: 100 });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^source +count +p50_ms/m);
    expect(r.stdout).toMatch(/^sentry +p50_ms +█+ +\S+ms$/m);
    expect(r.stdout).toMatch(/^ +p95_ms +█+ +\S+ms$/m);
  });
});

describe('live tail', () => {
  const waitFor = async (cond: () => boolean, what: string) => {
    for (let i = 0; i < 400 && !cond(); i++) await new Promise((r) => setTimeout(r, 25));
    if (!cond()) throw new Error(`timed out waiting for ${what}`);
  };

  it('logs tail prints records sent while it runs, once each and in order, and stops cleanly on Ctrl-C', async () => {
    const child = spawn(process.execPath, [BIN, 'logs', 'tail', '--service', 'tailsvc', '--interval', '100ms', '--initial', '2'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    await sendLogs(t, [{ resource: { service: 'tailsvc' }, logs: [0, 1, 2].map((i) => ({ at: T0 - 50_000 + i, body: `before ${i}` })) }]);
    // Only the two newest records come first.
    await waitFor(() => out.includes('before 2'), 'the initial records');
    for (let batch = 0; batch < 3; batch++) {
      await sendLogs(t, [{ resource: { service: 'tailsvc' }, logs: [0, 1].map((i) => ({ at: T0 - 40_000 + batch * 10 + i, body: `live ${batch}-${i}`, severity: SEV.warn })) }]);
      await new Promise((r) => setTimeout(r, 150));
    }
    await waitFor(() => out.includes('live 2-1'), 'the live records');
    await new Promise((r) => setTimeout(r, 300)); // a few more polls: nothing may repeat
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    expect(err).toBe('');
    const bodies = out.trimEnd().split('\n').map((l) => l.split(/ {2,}/).pop());
    expect(bodies).toEqual(['before 1', 'before 2', 'live 0-0', 'live 0-1', 'live 1-0', 'live 1-1', 'live 2-0', 'live 2-1']);
    expect(out).toMatch(/^2026-06-01 11:59:20\.000Z +WARN +tailsvc +live 0-0$/m);
  });

  it('errors tail catches up after failed polls without gaps or repeats, and stops on its signal', async () => {
    let down = false;
    let answered = 0;
    const flaky: typeof fetch = async (input, init) => {
      if (down) throw new TypeError('fetch failed');
      const r = await fetch(input, init);
      answered++;
      return r;
    };
    const stop = new AbortController();
    let stdout = '';
    let stderr = '';
    const io = {
      stdout: { write: (s: string) => (stdout += s), columns: 200 },
      stderr: { write: (s: string) => (stderr += s) },
      stdin: (async function* () {})(),
      env,
    };
    const { runCommands } = await import('../../src/cli/commands.js');
    const run = runCommands(['errors', 'tail', '--interval', '100ms', '--initial', '0', '--query', 'service:tailed'], { io, fetch: flaky, signal: stop.signal, loadStoredToken: async () => null, sleep: async () => {} });
    // Past the first poll (what exists when the tail starts is not printed with --initial 0).
    await waitFor(() => answered >= 2, 'the first polls');
    await sendEvent(t, { type: 'Boom', value: 'first', service: 'tailed', at: T0 - 5000 });
    await waitFor(() => stdout.includes('Boom: first'), `the first event (${stdout} / ${stderr})`);
    down = true;
    await new Promise((r) => setTimeout(r, 150));
    await sendEvent(t, { type: 'Boom', value: 'during the outage', service: 'tailed', at: T0 - 4000 });
    await new Promise((r) => setTimeout(r, 150));
    down = false;
    await waitFor(() => stdout.includes('during the outage'), 'the event sent during the outage');
    await sendEvent(t, { type: 'Boom', value: 'after', service: 'tailed', at: T0 - 3000 });
    await waitFor(() => stdout.includes('Boom: after'), 'the event after reconnecting');
    stop.abort();
    expect(await run).toBe(0);
    const lines = stdout.trimEnd().split('\n');
    expect(lines.map((l) => /Boom: ([a-z ]+?) \[/.exec(l)?.[1])).toEqual(['first', 'during the outage', 'after']);
    expect(stderr).toMatch(/retrying every 0\.1 s/);
    expect(stderr).toMatch(/reconnected; caught up/);
  });
});

describe('shell completions', () => {
  const shells = ['bash', 'zsh', 'fish'].filter((sh) => {
    try {
      execFileSync('sh', ['-c', `command -v ${sh}`]);
      return true;
    } catch {
      return false;
    }
  });

  it('bash, zsh and fish are installed here (scripts/install-test-tools.sh)', () => {
    expect(shells).toEqual(['bash', 'zsh', 'fish']);
  });

  it.each(['bash', 'zsh', 'fish'])('%s accepts the generated script (-n)', async (shell) => {
    const r = await runBin(['completion', shell], env);
    expect(r.code).toBe(0);
    const file = join(mkdtempSync(join(tmpdir(), 'sightline-completion-')), `sightline.${shell}`);
    writeFileSync(file, r.stdout);
    execFileSync(shell, ['-n', file]);
    expect(r.stdout).toContain('api-keys');
  });

  it('bash completes kebab-case tags, verbs (tail too), flags and enum values', () => {
    const script = execFileSync(process.execPath, [BIN, 'completion', 'bash'], { cwd: ROOT, env: { PATH: process.env.PATH, ...env } }).toString();
    const file = join(mkdtempSync(join(tmpdir(), 'sightline-completion-')), 'sightline.bash');
    writeFileSync(file, script);
    const complete = (words: string[]) =>
      execFileSync('bash', ['-c', `source ${file}; COMP_WORDS=(${words.map((w) => `"${w}"`).join(' ')}); COMP_CWORD=${words.length - 1}; _sightline; echo "\${COMPREPLY[@]}"`]).toString().trim();
    expect(complete(['sightline', 'api'])).toBe('api-keys');
    expect(complete(['sightline', 'logs', ''])).toBe('histogram insights search tail');
    expect(complete(['sightline', 'errors', 'list', '--sta'])).toBe('--status');
    expect(complete(['sightline', 'logs', 'histogram', '--step', ''])).toBe('1m 5m 15m 1h 6h 1d');
    expect(complete(['sightline', 'errors', 'list', '--output', 'j'])).toBe('json jsonl');
  });
});
