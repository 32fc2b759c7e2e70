/**
 * `sightline logs tail` and `sightline errors tail`: follow new records as they arrive, like
 * `tail -f`, until Ctrl-C. Both poll a catalogue read (logs.search, events.search) through the
 * client with a cursor and an overlap window, and drop what they already printed, so nothing is
 * printed twice and nothing is skipped when a poll fails and the next one catches up.
 *
 * - logs: the cursor is the server's `to` of the last poll; each poll asks from `cursor - lookback`,
 *   because a log's timestamp is the sender's and can arrive a little after later ones.
 * - errors: the cursor is the newest `received_at` (the server's clock) seen; each poll asks
 *   `received_at:>=cursor - 10 s`, covering events received before the last poll but committed after it.
 */
import type { AnyOperation } from '../../operations/define.js';
import { createClient, SightlineError, type ClientOptions } from '../client/index.js';
import type { CliIO } from './commands.js';
import { levelColour, paint } from './format.js';
import { UsageError } from './usage-error.js';

type Row = Record<string, unknown>;
type Filters = Record<string, string>;
interface Since {
  cursor: string;
  lookbackMs: number;
  until?: string;
}

interface TailSource {
  operationId: string;
  summary: string;
  /** Input fields of the operation a tail passes through as flags. */
  filters: readonly string[];
  /** The operation's largest page. */
  pageSize: number;
  /** Ask for the newest `limit` rows (the first screen) or for what came since the cursor (and up to `until`). */
  input(filters: Filters, since: Since | null, limit: number, offset: number): Row;
  /** Where the next poll starts, from an answer and its rows. */
  cursor(answer: Row, rows: Row[], previous: string | null): string | null;
  id(row: Row): string;
  /** Sort key, oldest first. */
  time(row: Row): string;
  line(row: Row, width: number, color: boolean): string;
}

const iso = (ms: number) => new Date(ms).toISOString();
/** At most this many rows are fetched in one poll (a burst beyond it is caught by the next polls). */
const MAX_ROWS_PER_POLL = 5_000;

function fitLine(parts: string[], width: number): string {
  const text = parts.filter(Boolean).join('  ').replace(/\s*[\r\n]+\s*/g, ' ');
  return text.length > width ? text.slice(0, Math.max(1, width - 1)) + '…' : text;
}

function levelCell(level: unknown, color: boolean): string {
  const text = String(level ?? '').toUpperCase().padEnd(5);
  return paint(text, levelColour(String(level ?? '')), color);
}

export const TAILS: Record<string, TailSource> = {
  logs: {
    operationId: 'logs.search',
    summary: 'Follow new log records as they arrive (Ctrl-C to stop)',
    filters: ['q', 'level', 'service', 'environment', 'release', 'source', 'connector_key'],
    pageSize: 1000,
    input: (filters, since, limit, offset) => ({
      ...filters,
      ...(since ? { from: iso(Date.parse(since.cursor) - since.lookbackMs), ...(since.until ? { to: since.until } : {}) } : {}),
      limit,
      offset,
    }),
    cursor: (answer, _rows, previous) => (typeof answer.to === 'string' ? answer.to : previous),
    id: (r) => String(r.id),
    time: (r) => String(r.timestamp ?? ''),
    line: (r, width, color) => fitLine([String(r.timestamp ?? '').replace('T', ' '), levelCell(r.level, color), String(r.service ?? '-'), String(r.body ?? '')], width),
  },
  errors: {
    operationId: 'events.search',
    summary: 'Follow new error events as they arrive (Ctrl-C to stop)',
    filters: ['query', 'q'],
    pageSize: 100,
    input: (filters, since, limit, offset) => {
      const terms = [filters.query ?? filters.q ?? ''];
      if (since) terms.push(`received_at:>=${iso(Date.parse(since.cursor) - 10_000)}`);
      if (since?.until) terms.push(`received_at:<=${since.until}`);
      const query = terms.filter(Boolean).join(' ');
      return { ...(query ? { query } : {}), limit, offset };
    },
    cursor: (_answer, rows, previous) => rows.map((r) => String(r.received_at ?? '')).reduce((a, b) => (b > a ? b : a), previous ?? '') || null,
    id: (r) => String(r.event_id),
    time: (r) => String(r.received_at ?? r.timestamp ?? ''),
    line: (r, width, color) =>
      fitLine(
        [String(r.timestamp ?? '').replace('T', ' '), levelCell(r.level, color), String(r.service_name || '-'), `${String(r.title ?? '')}${r.environment ? ` [${String(r.environment)}]` : ''}`, `group ${String(r.group_id ?? '')}`],
        width,
      ),
  },
};

export interface TailOptions {
  io: CliIO;
  operations: readonly AnyOperation[];
  credentials: () => Promise<Pick<ClientOptions, 'baseUrl' | 'apiKey' | 'accessToken'>>;
  fetch?: ClientOptions['fetch'];
  sleep?: ClientOptions['sleep'];
  /** Stops the tail; without one, Ctrl-C (SIGINT) and SIGTERM do. */
  signal?: AbortSignal;
}

interface TailArgs {
  filters: Filters;
  intervalMs: number;
  lookbackMs: number;
  initial: number;
  jsonl: boolean;
  help: boolean;
}

/** "30s", "5m", "1h", or plain seconds. */
function durationMs(flag: string, raw: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(raw.trim());
  if (!m) throw new UsageError(`--${flag} expects a duration such as 2s, 30s, 5m or 1h, got ${JSON.stringify(raw)}.`);
  const n = Number(m[1]);
  return n * ({ ms: 1, s: 1000, m: 60_000, h: 3_600_000 } as const)[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
}

const kebab = (s: string) => s.replace(/_/g, '-');

function parseTailArgs(source: TailSource, argv: string[]): TailArgs {
  const out: TailArgs = { filters: {}, intervalMs: 2000, lookbackMs: 60_000, initial: 10, jsonl: false, help: false };
  const byFlag = new Map(source.filters.map((f) => [kebab(f), f]));
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (token === '-h' || token === '--help') {
      out.help = true;
      continue;
    }
    if (!token.startsWith('--')) throw new UsageError(`Unexpected argument ${JSON.stringify(token)}: every input is a --flag.`);
    const eq = token.indexOf('=');
    const name = token.slice(2, eq === -1 ? undefined : eq).replace(/_/g, '-');
    const value = () => {
      if (eq !== -1) return token.slice(eq + 1);
      const next = argv[++i];
      if (next === undefined) throw new UsageError(`--${name} needs a value.`);
      return next;
    };
    const field = byFlag.get(name);
    if (field) out.filters[field] = value();
    else if (name === 'interval') out.intervalMs = Math.max(100, durationMs(name, value()));
    else if (name === 'lookback') out.lookbackMs = durationMs(name, value());
    else if (name === 'initial') {
      const n = Number(value());
      if (!Number.isInteger(n) || n < 0 || n > 100) throw new UsageError('--initial expects a whole number from 0 to 100.');
      out.initial = n;
    } else if (name === 'output') {
      const v = value();
      if (v !== 'jsonl' && v !== 'table') throw new UsageError('--output for a tail is table (one line a record) or jsonl.');
      out.jsonl = v === 'jsonl';
    } else if (name === 'json') out.jsonl = true;
    else throw new UsageError(`Unknown flag --${name} (flags: ${[...byFlag.keys(), 'interval', 'lookback', 'initial', 'output'].map((f) => `--${f}`).join(' ')}).`);
  }
  return out;
}

/** The flags of a tail, for help and shell completion (values: null for a switch, [] for a free value). */
export function tailFlags(tag: string): Array<{ name: string; description: string; values: string[] | null }> {
  const source = TAILS[tag]!;
  return [
    ...source.filters.map((f) => ({ name: kebab(f), description: `filter, as for ${source.operationId}`, values: [] as string[] })),
    { name: 'interval', description: 'time between polls (default 2s)', values: [] },
    ...(tag === 'logs' ? [{ name: 'lookback', description: 'how late a record may arrive and still be shown (default 1m)', values: [] }] : []),
    { name: 'initial', description: 'recent records printed first (default 10)', values: [] },
    { name: 'output', description: 'table or jsonl', values: ['table', 'jsonl'] },
    { name: 'help', description: 'help', values: null },
  ];
}

export function tailHelp(tag: string): string {
  const source = TAILS[tag]!;
  return [
    `sightline ${tag} tail: ${source.summary}`,
    '',
    `Polls ${source.operationId} and prints each new record once, oldest first; Ctrl-C stops it (exit 0).`,
    'A failed poll (server restarting, network down) is retried; the next poll catches up, so no record is lost.',
    '',
    'Flags',
    ...source.filters.map((f) => `  --${kebab(f).padEnd(16)} filter, as for ${source.operationId}`),
    '  --interval <dur>   time between polls (default 2s)',
    ...(tag === 'logs' ? ['  --lookback <dur>   how late a record may arrive after its timestamp and still be shown (default 1m)'] : []),
    '  --initial <n>      recent records printed first, 0 to 100 (default 10)',
    '  --output <mode>    table (one line a record, default) or jsonl',
    '',
  ].join('\n');
}

function waitFor(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}

export async function runTail(tag: string, argv: string[], opts: TailOptions): Promise<number> {
  const source = TAILS[tag]!;
  const { io } = opts;
  const args = parseTailArgs(source, argv);
  if (args.help) {
    io.stdout.write(tailHelp(tag));
    return 0;
  }
  const controller = new AbortController();
  const stop = () => controller.abort();
  if (opts.signal) opts.signal.addEventListener('abort', stop, { once: true });
  else {
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  }
  const signal = controller.signal;
  const client = createClient({ ...(await opts.credentials()), operations: opts.operations, fetch: opts.fetch, sleep: opts.sleep });
  const width = opts.io.stdout.columns || Number(io.env.COLUMNS) || 160;
  const color = !!io.stdout.isTTY && !io.env.NO_COLOR;
  /** Printed ids with their sort time, forgotten once older than the overlap window. */
  const seen = new Map<string, string>();
  let cursor: string | null = null;
  let first = true;
  let failing = false;

  const print = (rows: Row[]) => {
    rows.sort((a, b) => (source.time(a) < source.time(b) ? -1 : source.time(a) > source.time(b) ? 1 : source.id(a).localeCompare(source.id(b))));
    for (const r of rows) io.stdout.write((args.jsonl ? JSON.stringify(r) : source.line(r, width, color)) + '\n');
  };

  /** One poll: the rows not printed before, newest pages first until a page holds nothing new. */
  const poll = async (since: Since | null, limit: number): Promise<{ answer: Row; rows: Row[] }> => {
    const fresh: Row[] = [];
    let firstAnswer: Row | null = null;
    for (let offset = 0; offset < MAX_ROWS_PER_POLL; ) {
      const answer = (await client.request(source.operationId, source.input(args.filters, since, limit, offset))) as Row;
      firstAnswer ??= answer;
      const rows = Array.isArray(answer.data) ? (answer.data as Row[]) : [];
      const unseen = rows.filter((r) => !seen.has(source.id(r)));
      fresh.push(...unseen);
      // Newest first: once a whole page was printed before, older pages were too.
      const more = answer.has_more === true || (typeof answer.total === 'number' && offset + rows.length < answer.total);
      if (!since || !more || !unseen.length || !rows.length) break;
      offset += rows.length;
    }
    for (const r of fresh) seen.set(source.id(r), source.time(r));
    return { answer: firstAnswer ?? {}, rows: fresh };
  };

  try {
    while (!signal.aborted) {
      try {
        if (first) {
          // The newest few first; everything else already in the overlap window counts as printed.
          const { answer, rows } = await poll(null, Math.max(1, Math.min(args.initial || 1, source.pageSize)));
          if (args.initial > 0) print(rows);
          cursor = source.cursor(answer, rows, null);
          if (cursor) await poll({ cursor, lookbackMs: args.lookbackMs, until: cursor }, source.pageSize);
          first = false;
        } else {
          const { answer, rows } = await poll(cursor ? { cursor, lookbackMs: args.lookbackMs } : null, source.pageSize);
          cursor = source.cursor(answer, rows, cursor);
          print(rows);
        }
        if (failing) io.stderr.write('sightline: reconnected; caught up.\n');
        failing = false;
        // Forget what the overlap window can no longer return.
        if (cursor && seen.size > 10_000) {
          const horizon = iso(Date.parse(cursor) - Math.max(args.lookbackMs, 10_000) - 60_000);
          for (const [id, t] of seen) if (t < horizon) seen.delete(id);
        }
      } catch (err) {
        // No HTTP answer, or the server is unavailable: keep the cursor and try again.
        if (err instanceof SightlineError && (err.status === 0 || err.status === 502 || err.status === 503 || err.status === 504)) {
          if (!failing) io.stderr.write(`sightline: ${err.message} — retrying every ${args.intervalMs / 1000} s (Ctrl-C to stop).\n`);
          failing = true;
        } else throw err;
      }
      await waitFor(args.intervalMs, signal);
    }
    return 0;
  } finally {
    if (opts.signal) opts.signal.removeEventListener('abort', stop);
    else {
      process.removeListener('SIGINT', stop);
      process.removeListener('SIGTERM', stop);
    }
  }
}
