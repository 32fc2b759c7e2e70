/**
 * Issue 20: error event reads answer the same on both backends. A seeded random set of error events
 * (three projects, groups with a merged duplicate, users by id / email / username / IP or none, tags
 * with numeric-looking values, wildcard-hostile characters, quotes and non-ASCII, trace ids present,
 * absent or '', releases, environments, services, received times skewed before, shortly after and
 * hours after the event, SDK retries of an event id) goes through the same ingest path into a
 * SQLite-only server and a server with error events in ClickHouse; then every read of
 * ErrorEventsReader and the error-group reads built on it (window counts, tags, searchEvents,
 * latency, related traces, replays) over random windows, and many events.search queries, must answer
 * the same — group ids (random per server) compared by fingerprint, latency `avg_ms` within 0.001
 * (float summation order), everything else exactly. Runs in the clickhouse-chdb project.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rng } from '../../bench/lib.js';
import { bootstrapOrganization } from '../../src/core/bootstrap.js';
import { parseEventQuery, type EventQueryTerm } from '../../src/domain/errors/event-query.js';
import type { ErrorEventRecord } from '../../src/domain/telemetry-types.js';
import { createChErrorEventsReader } from '../../src/storage/clickhouse/error-events.js';
import { createSqliteErrorEventsReader, MAX_MS, MIN_MS, type ErrorEventsReader, type LinkedEventsQuery } from '../../src/storage/error-events-read.js';
import type { KeyedErrorEvent } from '../../src/storage/errors-repo.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { bodyDiffs } from '../support/body-diffs.js';

/** avg_ms within 0.001 (float summation order), every other number exactly. */
const diffs = (x: unknown, y: unknown) => bodyDiffs(x, y, (a, b, path) => (path.endsWith('.avg_ms') ? Math.abs(a - b) <= 0.001 + 1e-12 : a === b || Object.is(a, b)));

const mode = process.env.SIGHTLINE_TEST_CLICKHOUSE;
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const NOW = Date.parse('2026-05-20T10:30:00.000Z');
const T0 = NOW - 3 * DAY;
const N = 1_500;

const FPS = ['fp-a', 'fp-b', 'fp-c', 'fp-d', 'fp-dup', 'fp-e'];
const MESSAGES = ['connection reset by peer', 'Timeout after 30s', 'Ünïcode fäilure', 'ÜNÏCODE FÄILURE', '100% full', 'a_b c%d', 'back\\slash', "it's \"quoted\"", 'multi\nline error', 'UPPER case'];
const TYPES = ['ConnectionError', 'TimeoutError', 'TypeError', 'Ünïcode'];
const USERS: (Record<string, unknown> | null)[] = [
  null, null, { ip_address: '{{auto}}' }, { ip_address: '10.0.0.1' },
  { id: 'u1' }, { id: 'U1' }, { id: 'u2', email: 'x@y.io' }, { id: 42 }, { id: '42' }, { id: '' , email: 'c@x.io' }, { email: 'A@X.io' },
  { username: 'Bo' }, { username: 'bo' }, { username: 'ünï' }, { id: 'u%_\\' }, { email: 'e_1@x.io', username: 'z' },
];
const TAG_VALUES = ['12', ' 3.5 ', '7abc', 'abc', '0', '-4', '1e3', '.5', '1e400', '-1e999', '\u00a05', '\t7', '+2.5e1x', '100%', 'a_b', 'back\\slash', "it's", '"q"', 'Ünïcode', 'ÜNÏCODE', 'UPPER', 'upper', ''];
const TRACES = ['0af7651916cd43dd8448eb211c80319c', '4bf92f3577b34da6a3ce929d0e0e4736', 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', 'ABCDEF0123456789abcdef0123456789'];
const RELEASES = ['', '1.2.3', '1.2.4', 'web@2.0.0', 'Ünï-1'];
const ENVS = ['production', 'staging', 'Production', ''];
const SERVICES = ['api', 'API', 'worker', 'check out', ''];

function makeEvents(seed: number): { pid: number; item: KeyedErrorEvent; phase: number }[] {
  const r = rng(seed);
  const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
  const out: { pid: number; item: KeyedErrorEvent; phase: number }[] = [];
  for (let i = 0; i < N; i++) {
    const pid = r() < 0.7 ? 1 : r() < 0.6 ? 2 : 3;
    const fp = pick(FPS);
    // Event times over three days, some fractional, some shared (ties broken by received time).
    const ts = r() < 0.05 ? NOW - 2 * HOUR : r() < 0.03 ? T0 + Math.floor(r() * 3) * DAY : T0 + Math.floor(r() * 3 * DAY) + (r() < 0.3 ? 0.5 : 0);
    const x = r();
    const skew = x < 0.15 ? -Math.floor(r() * 5000) : x < 0.85 ? Math.floor(r() * 4000) : x < 0.95 ? HOUR + Math.floor(r() * 20 * HOUR) : HOUR;
    const tags: Record<string, string> = {};
    if (r() < 0.6) tags.n = pick(TAG_VALUES);
    if (r() < 0.4) tags.region = pick(['eu-west-1', 'us-east-1', 'EU-WEST-2']);
    if (r() < 0.3) tags['http.status_code'] = pick(['500', '502', '404', '200']);
    if (r() < 0.2) tags['we"ird'] = pick(TAG_VALUES);
    if (r() < 0.2) tags.name = pick(TAG_VALUES);
    const t = r();
    const trace = t < 0.5 ? null : t < 0.6 ? '' : pick(TRACES);
    const spanPick = r();
    const e: ErrorEventRecord = {
      event_id: `${(i + 1).toString(16).padStart(8, '0')}${'e'.repeat(24)}`,
      timestamp_ms: ts,
      received_ms: Math.floor(ts) + skew + (i % 7),
      source: r() < 0.8 ? 'sentry' : 'otlp',
      platform: pick(['node', 'python', 'Node']),
      level: pick(['error', 'error', 'warning', 'fatal', 'ERROR']),
      message: `${pick(MESSAGES)} #${i % 13}`,
      exceptions: [],
      fingerprint: null,
      environment: pick(ENVS),
      release: pick(RELEASES),
      service_name: pick(SERVICES),
      server_name: pick(['web-1', 'web-2', 'Web_3', '']),
      transaction: pick(['GET /x', 'POST /api/pay', '', '/ünï']),
      tags,
      user: pick(USERS),
      trace_id: trace,
      span_id: trace === null ? null : spanPick < 0.8 ? `b7ad6b71692033${(i % 4).toString().padStart(2, '0')}` : spanPick < 0.9 ? null : 'b7ad6b7169203399',
      payload: { n: i, msg: 'payload ü' },
    };
    out.push({ pid, phase: i < N / 2 ? 0 : 1, item: { event: e, key: { fingerprint: `${fp}`, components: [fp], method: 'message', type: pick(TYPES), title: `${fp} Title ${pick(['', 'Ünï', 'X_Y'])}`, culprit: '' } } });
    // SDK retries: the same event id again (same or other content): stored once.
    if (r() < 0.02) out.push({ pid, phase: i < N / 2 ? 0 : 1, item: { event: { ...e, message: 'retry' }, key: out[out.length - 1]!.item.key } });
  }
  return out;
}

interface Side {
  t: TestServer;
  reader: ErrorEventsReader;
  /** fingerprint → group id, per project */
  ids: Map<string, string>;
  /** group id → `G:<pid>:<fingerprint>` */
  names: Map<string, string>;
}

const sideIds = (t: TestServer) => {
  const rows = t.s.db.prepare('SELECT project_id, id, fingerprint FROM error_groups').all() as { project_id: number; id: string; fingerprint: string }[];
  return {
    ids: new Map(rows.map((g) => [`${g.project_id}:${g.fingerprint}`, g.id])),
    names: new Map(rows.map((g) => [g.id, `G:${g.project_id}:${g.fingerprint}`])),
  };
};

/** Group ids replaced by their project and fingerprint (the same on both sides). */
function norm(v: unknown, names: Map<string, string>): unknown {
  if (typeof v === 'string') return names.get(v) ?? v;
  if (Array.isArray(v)) return v.map((x) => norm(x, names));
  if (v instanceof Map) return norm(Object.fromEntries(v), names);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [names.get(k) ?? k, norm(x, names)]));
  return v;
}

describe.skipIf(mode !== 'chdb' && mode !== 'server')('error event reads on SQLite and on ClickHouse', () => {
  let a: Side;
  let b: Side;
  const pids = [1, 2, 3];
  const events = makeEvents(11);

  beforeAll(async () => {
    const sa = await startTestServer({ now: () => NOW, clickhouse: false });
    const sb = await startTestServer({ now: () => NOW });
    for (const t of [sa, sb]) {
      bootstrapOrganization(t.s.services, { org: 'Third org', project: 'third', email: 'third@test.local', now: NOW });
      expect(t.s.db.prepare('SELECT id FROM projects ORDER BY id').pluck().all().map(Number)).toEqual(pids);
      for (const phase of [0, 1]) {
        const list = events.filter((e) => e.phase === phase);
        const jobs: Promise<unknown>[] = [];
        for (let i = 0; i < list.length; i += 40) {
          const slice = list.slice(i, i + 40);
          for (const pid of pids) {
            const items = slice.filter((e) => e.pid === pid).map((e) => e.item);
            if (items.length) jobs.push(t.s.services.writeBatch(() => t.s.services.errorsIngest.ingest(String(pid), `p${pid}`, items, NOW)));
          }
        }
        await Promise.all(jobs);
        if (phase === 0) {
          // A duplicate merged into a canonical group of each project: its later events count on the canonical.
          const { ids } = sideIds(t);
          for (const pid of pids) {
            const m = t.s.services.errorGroups.merge(String(pid), ids.get(`${pid}:fp-a`)!, [ids.get(`${pid}:fp-dup`)!], NOW);
            expect(m.ok).toBe(true);
          }
        }
      }
      // Replays: some holding error ids of project 1 (one unknown), others only in a window.
      const rr = rng(3);
      const ins = t.s.db.prepare(`INSERT INTO replays (project_id, replay_id, started_ms, ended_ms, segments, urls, error_ids, trace_ids, environment, release, user_json, updated_ms)
        VALUES (1, ?, ?, ?, 1, '["/a"]', ?, '[]', ?, '', NULL, ?)`);
      for (let i = 0; i < 60; i++) {
        const start = T0 + Math.floor(rr() * 3 * DAY);
        const errs = rr() < 0.6 ? Array.from({ length: 1 + Math.floor(rr() * 3) }, () => events[Math.floor(rr() * events.length)]!.item.event.event_id) : [];
        if (rr() < 0.1) errs.push('f'.repeat(32));
        ins.run(`r${i}`, start, start + Math.floor(rr() * HOUR), JSON.stringify(errs), ['production', 'staging'][i % 2], NOW);
      }
    }
    const side = (t: TestServer, reader: ErrorEventsReader): Side => ({ t, reader, ...sideIds(t) });
    a = side(sa, createSqliteErrorEventsReader(sa.s.db));
    b = side(sb, createChErrorEventsReader(sb.s.services.clickhouse!.engine, sb.s.db));
  }, 120_000);
  afterAll(async () => {
    await a?.t.close();
    await b?.t.close();
  });

  it('stores the events in ClickHouse only, once per event id', async () => {
    const unique = new Set(events.map((e) => `${e.pid}:${e.item.event.event_id}`)).size;
    expect(a.t.s.db.prepare('SELECT count(*) FROM error_events').pluck().get()).toBe(unique);
    expect(b.t.s.db.prepare('SELECT count(*) FROM error_events').pluck().get()).toBe(0);
    expect(b.t.s.db.prepare('SELECT count(*) FROM error_event_ids').pluck().get()).toBe(unique);
    expect(Number((await b.t.s.services.clickhouse!.engine.query<{ n: number }>('SELECT count() AS n FROM error_events'))[0]!.n)).toBe(unique);
    expect(unique).toBeLessThan(events.length); // retries were sent
    // The lifetime rollups agree.
    const groups = (s: Side) => norm(s.t.s.db.prepare('SELECT id, event_count, first_seen, last_seen, first_release, last_release, merged_into FROM error_groups ORDER BY fingerprint, project_id').all(), s.names);
    expect(groups(b)).toEqual(groups(a));
  });

  it('answers every ErrorEventsReader read the same', async () => {
    const r = rng(77);
    const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
    const times = () => {
      const x = r();
      if (x < 0.1) return [MIN_MS, MAX_MS];
      const lo = x < 0.3 ? T0 + Math.floor(r() * 3) * DAY : T0 - HOUR + Math.floor(r() * (3 * DAY + 2 * HOUR)) + (r() < 0.2 ? 0.5 : 0);
      return [lo, lo + (r() < 0.5 ? Math.floor(r() * 6 * HOUR) : Math.floor(r() * 3 * DAY))];
    };
    // A group list: one group, a group with its merged duplicate, several (of the same project).
    const groupList = (pid: number): string[] => {
      const x = r();
      if (x < 0.3) return ['fp-a', 'fp-dup'];
      if (x < 0.8) return [pick(FPS)];
      return FPS.filter(() => r() < 0.5).concat('fp-e');
    };
    const ids = (s: Side, pid: number, fps: string[]) => fps.map((f) => s.ids.get(`${pid}:${f}`)).filter((x): x is string => !!x);
    const eventIds = events.map((e) => e.item.event.event_id);
    const problems: string[] = [];
    const check = async (label: string, f: (s: Side) => Promise<unknown>) => {
      const [x, y] = [norm(await f(a), a.names), norm(await f(b), b.names)];
      const d = diffs(x, y);
      if (d.length) problems.push(`${label}: ${d.slice(0, 3).join('; ')}`);
    };
    for (let i = 0; i < 40; i++) {
      const pid = pick(pids);
      const fps = groupList(pid);
      const [lo, hi] = times() as [number, number];
      const label = `#${i} p${pid} ${fps} [${lo}, ${hi}]`;
      await check(`latestEvent ${label}`, (s) => s.reader.latestEvent(pid, ids(s, pid, fps)));
      const ev = pick(eventIds);
      await check(`event ${label} ${ev}`, (s) => s.reader.event(pid, ev));
      // As window counts ask: all of [lo, hi], or the edges [lo, m1) and [m2, hi] of whole hours between (disjoint).
      const m1 = Math.ceil(lo / HOUR) * HOUR;
      const m2 = Math.max(m1, Math.floor(hi / HOUR) * HOUR);
      const ranges = r() < 0.4 || hi - lo > 10 * DAY ? [{ lo, hi, closed: true }] : [{ lo, hi: m1, closed: false }, { lo: m2, hi, closed: true }];
      // Several sets at once (as errors.list asks for a page): the fingerprints together, then each alone.
      await check(`userKeys ${label}`, async (s) =>
        (await s.reader.userKeys(pid, [ids(s, pid, fps), ...ids(s, pid, fps).map((id) => [id])], ranges)).map((set) =>
          set.map((k) => ({ k: k.k ?? '', n: k.n })).sort((p, q) => (p.k < q.k ? -1 : p.k > q.k ? 1 : 0)),
        ),
      );
      const sample = pick([1, 5, 50, 1000]);
      await check(`recent ${label} ${sample}`, (s) => s.reader.recent(pid, ids(s, pid, fps), lo, hi, sample));
      await check(`firstEventIn ${label}`, (s) => s.reader.firstEventIn(pid, ids(s, pid, fps), lo, hi));
      const page = { from: lo, to: hi, limit: pick([1, 3, 50]), offset: pick([0, 0, 1, 2]) };
      await check(`relatedTraces ${label}`, (s) => s.reader.relatedTraces(pid, ids(s, pid, fps), page));
      const trace = pick([...TRACES, '', 'nope']);
      await check(`traceGroups ${label} ${trace}`, async (s) => (await s.reader.traceGroups(pid, trace)).sort((p, q) => (s.names.get(p.group_id)! < s.names.get(q.group_id)! ? -1 : 1)));
      const one = pick(FPS);
      await check(`count ${label} ${one}`, (s) => s.reader.count(pid, s.ids.get(`${pid}:${one}`) ?? 'none', lo, hi));
      const q: LinkedEventsQuery = pick<LinkedEventsQuery>([{ groupId: one, since: lo }, { release: pick(RELEASES), since: lo }, { window: { from: lo, to: hi } }]);
      await check(`linked ${label} ${JSON.stringify(q)}`, async (s) =>
        (await s.reader.linked(pid, 'groupId' in q ? { groupId: s.ids.get(`${pid}:${q.groupId}`) ?? 'none', since: q.since } : q)).sort((p, q2) => (p.event_id < q2.event_id ? -1 : 1)),
      );
      const rel = pick([...RELEASES, 'never']);
      await check(`releaseSeen ${label} ${rel}`, (s) => s.reader.releaseSeen(pid, rel));
      const lat = { fromMs: lo, toMs: hi, ...(r() < 0.3 ? { service: pick(SERVICES) } : {}), ...(r() < 0.3 ? { environment: pick(ENVS) } : {}) };
      await check(`latency ${label} ${JSON.stringify(lat)}`, (s) => s.reader.latency(pid, lat));
    }
    expect(problems).toEqual([]);
  });

  it('answers the error-group reads built on the events the same', async () => {
    const r = rng(91);
    const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
    const problems: string[] = [];
    const check = async (label: string, f: (s: Side) => unknown) => {
      const [x, y] = [norm(await f(a), a.names), norm(await f(b), b.names)];
      const d = diffs(x, y);
      if (d.length) problems.push(`${label}: ${d.slice(0, 3).join('; ')}`);
    };
    for (let i = 0; i < 30; i++) {
      const pid = String(pick(pids));
      const fp = pick(FPS.filter((f) => f !== 'fp-dup'));
      const gid = (s: Side) => s.ids.get(`${pid}:${fp}`) ?? 'none';
      const x = r();
      const w: [number | undefined, number | undefined] =
        x < 0.15 ? [undefined, undefined] : x < 0.25 ? [T0 + DAY, undefined] : (() => {
          const lo = T0 - HOUR + Math.floor(r() * 3 * DAY) + (r() < 0.2 ? 0.5 : 0);
          return [lo, lo + Math.floor(r() * (r() < 0.5 ? 5 * HOUR : 2 * DAY))];
        })();
      const label = `#${i} p${pid} ${fp} ${w}`;
      await check(`windowCounts ${label}`, (s) => s.t.s.services.errorGroups.windowCounts(pid, [gid(s)], w[0], w[1]));
      const tagOpts = { fromMs: w[0], toMs: w[1], sample: pick([5, 100, 1000]), maxKeys: pick([3, 20]), maxValues: pick([2, 10]) };
      await check(`tags ${label}`, (s) => s.t.s.services.errorGroups.tags(pid, gid(s), tagOpts));
      await check(`latestEvent ${label}`, (s) => s.t.s.services.errorGroups.latestEvent(pid, gid(s)));
      await check(`firstEventIn ${label}`, (s) => s.t.s.services.errorGroups.firstEventIn(pid, gid(s), w[0], w[1]));
      const page = { fromMs: w[0], toMs: w[1], limit: pick([2, 20]), offset: pick([0, 1]) };
      await check(`relatedTraces ${label}`, (s) => s.t.s.services.errorGroups.relatedTraces(pid, gid(s), page));
      const rw = { fromMs: w[0] ?? T0, toMs: w[1] ?? NOW, environment: pick(['', 'production']), limit: pick([3, 20]) };
      await check(`replays ${label}`, (s) => s.t.s.services.errorGroups.replays(pid, gid(s), rw));
      const lat = { fromMs: w[0] ?? T0 - DAY, toMs: w[1] ?? NOW, ...(r() < 0.3 ? { service: pick(SERVICES) } : {}) };
      await check(`latency ${label}`, (s) => s.t.s.services.errorGroups.latency(pid, lat));
    }
    // Replays linked by error ids exist on both (otherwise the comparison above proves little).
    const linked = await a.t.s.services.errorGroups.replays('1', a.ids.get('1:fp-a')!, { fromMs: 0, toMs: 1, environment: 'none', limit: 20 });
    expect(linked.some((x) => x.linked_by === 'error')).toBe(true);
    expect(problems).toEqual([]);
  });

  it('answers events.search queries the same', async () => {
    const r = rng(5);
    const pick = <T,>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)]!;
    const iso = (ms: number) => new Date(ms).toISOString();
    const q = (s: string) => `"${s.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;
    const someEvent = () => pick(events).item.event.event_id;
    // `{G:fp}`: the group id of the fingerprint in the query's project; `{g:fp}`: it upper-cased with a wildcard.
    const TERMS: (() => string)[] = [
      () => pick(['reset', 'timeout', 'ünïcode', 'ÜNÏCODE', 'fäilure', '100%', 'a_b', 'c%d', 'upper', 'TITLE', 'Ünï', 'x_y', 'nothing-matches']),
      () => `-${pick(['reset', 'timeout', 'upper'])}`,
      () => q(pick(['connection reset', 'back\\slash', "it's \"quoted\"", 'multi\nline', '% full', 'Ünïcode fäilure'])),
      () => `${pick(['', '-'])}level:${pick(['error', 'ERROR', '[error,fatal]', 'warn*', '*', 'f*l'])}`,
      () => `${pick(['', '-'])}type:${pick(['TypeError', 'typeerror', '*Error', 'Ünïcode', 'ünïcode', '[ConnectionError,TimeoutError]'])}`,
      () => `${pick(['', '-'])}service:${pick(['api', 'API', 'a*', q('check out'), '*', q(''), '[api,worker]'])}`,
      () => `${pick(['', '-'])}env:${pick(['production', 'PROD*', 'staging', '*ion', q('')])}`,
      () => `${pick(['', '-'])}release:${pick(['1.2.3', '1.2.*', 'web@*', 'ünï-1', 'Ünï-1', '*'])}`,
      () => `transaction:${pick([q('GET /x'), '*/api/*', '/ünï', '/Ünï', q('')])}`,
      () => `${pick(['', '-'])}server:${pick(['web-1', 'WEB-*', 'web_3', 'Web_*', 'web?3', 'w%'])}`,
      () => `${pick(['', '-'])}trace:${pick([...TRACES, TRACES[3]!.toLowerCase(), '0af7*', '*', q('')])}`,
      () => `source:${pick(['sentry', 'OTLP', 's*'])}`,
      () => `platform:${pick(['node', 'NODE', 'py*'])}`,
      () => `event_id:${pick([someEvent(), someEvent().toUpperCase(), `${someEvent().slice(0, 6)}*`, '[' + someEvent() + ',' + someEvent() + ']'])}`,
      () => `${pick(['', '-'])}user.id:${pick(['u1', 'U1', '42', 'u*', '*', q('u%_\\'), 'u%*', '*\\*'])}`,
      () => `user.email:${pick(['x@y.io', 'a@x.io', '*@x.io', 'e_1*', 'E?1*'])}`,
      () => `user.username:${pick(['bo', 'BO', 'ünï', 'ÜNÏ', 'z', '*'])}`,
      () => `${pick(['', '-'])}message:${pick(['reset', 'RESET', '*full*', '100%', 'a_b', '*\\*', q('multi\nline'), 'multi*line', 'ünïcode', 'line*error'])}`,
      () => `title:${pick(['title', 'fp-a*', '*x_y', 'ünï', 'Ünï'])}`,
      () => `${pick(['', '-'])}tags.n:${pick(['12', q(' 3.5 '), '7abc', '7ABC', 'abc', '100%', 'a_b', 'a?b', q('back\\slash'), q("it's"), q('"q"'), 'ünïcode', 'ÜNÏCODE', 'upper', '*', '1*', q(''), '[12,abc]'])}`,
      () => `${pick(['', '-'])}tags.n:${pick(['>', '>=', '<', '<='])}${pick(['0', '3.5', '7', '12', '-4', '1000', '0.5', '-1'])}`,
      () => `tags.name:${pick(['>=0', '<10', 'Ünïcode', 'ünïcode', 'UPPER', 'upper', '*%*', '*_*'])}`,
      () => `tags.region:${pick(['eu-*', 'EU-*', 'us-east-1', 'eu-west-?'])}`,
      () => `tags.http.status_code:${pick(['>=500', '<500', '404', '5*'])}`,
      () => `${pick(['', '-'])}timestamp:${pick(['>', '>=', '<', '<='])}${iso(T0 + Math.floor(r() * 3 * DAY))}`,
      () => `timestamp:${pick([iso(NOW - DAY).slice(0, 10), '-24h', '-90m', String(T0 + DAY)])}`,
      () => `received_at:${pick(['>', '<='])}${iso(T0 + Math.floor(r() * 3 * DAY))}`,
      () => `${pick(['', '-'])}group:${pick(['{G:fp-a}', '{G:fp-dup}', '{G:fp-c}', '{g:fp-b}', '{g:fp-dup}', '[{G:fp-a},{G:fp-e}]'])}`,
    ];
    const problems: string[] = [];
    let nonEmpty = 0;
    for (let i = 0; i < 200; i++) {
      const pid = pick(pids);
      const text = Array.from({ length: 1 + Math.floor(r() * 3) }, () => pick(TERMS)()).join(' ');
      const window = r() < 0.5 ? {} : { fromMs: T0 + Math.floor(r() * 2 * DAY), ...(r() < 0.7 ? { toMs: NOW - Math.floor(r() * DAY) } : {}) };
      const page = { limit: pick([1, 5, 50]), offset: pick([0, 0, 3, 40]), cap: pick([10, 1000]) };
      const terms = (s: Side): EventQueryTerm[] =>
        parseEventQuery(
          text.replace(/\{([Gg]):([a-z-]+)\}/g, (_, k: string, fp: string) => {
            const id = s.ids.get(`${pid}:${fp}`) ?? '00000000-none';
            return k === 'G' ? id : `${id.toUpperCase()}*`;
          }),
          NOW,
        ).terms;
      const label = `#${i} p${pid} ${JSON.stringify(text)} ${JSON.stringify(window)} ${JSON.stringify(page)}`;
      const x = norm(await a.reader.search(pid, { terms: terms(a), ...window, ...page }), a.names) as { n: number };
      const y = norm(await b.reader.search(pid, { terms: terms(b), ...window, ...page }), b.names);
      if (x.n) nonEmpty++;
      const d = diffs(x, y);
      if (d.length) problems.push(`${label}: ${d.slice(0, 3).join('; ')}`);
      if (i % 4 === 0) {
        const o = { terms: [] as EventQueryTerm[], ...window, limit: page.limit, offset: page.offset };
        const sx = norm(await a.t.s.services.errorGroups.searchEvents(String(pid), { ...o, terms: terms(a) }), a.names);
        const sy = norm(await b.t.s.services.errorGroups.searchEvents(String(pid), { ...o, terms: terms(b) }), b.names);
        const d2 = diffs(sx, sy);
        if (d2.length) problems.push(`searchEvents ${label}: ${d2.slice(0, 3).join('; ')}`);
      }
    }
    expect(problems).toEqual([]);
    expect(nonEmpty).toBeGreaterThan(100); // the queries mostly match something
  });
});
