/**
 * feedback.create over HTTP: field rules, body cap, Idempotency-Key, the per-project quota,
 * cross-origin use, and that a rejected request changes nothing.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';

const T0 = Date.parse('2026-03-01T00:00:00.000Z');
let clock = T0;
let t: TestServer;
let path: string;
/** A group id that the stubbed error-group look-up knows in our project. */
const GROUP = randomUUID();

beforeAll(async () => {
  t = await startTestServer({ now: () => clock });
  path = `/v1/projects/${t.projectId}/feedback`;
  // Error groups arrive with a later module; the look-up is the seam feedback uses.
  t.s.services.lookups.errorGroupExists = (projectId, id) => projectId === t.projectId && id === GROUP;
});
afterAll(() => t.close());
// Each test starts with an empty quota minute.
beforeEach(() => {
  clock += 61_000;
});

const count = (projectId = t.projectId) =>
  (t.s.db.prepare('SELECT COUNT(*) AS n FROM feedback WHERE project_id = ?').get(Number(projectId)) as { n: number }).n;
const stored = (id: string) => t.s.services.feedback.get(t.projectId, id)!;

function post(body: unknown, opts: { key?: string; idem?: string; headers?: Record<string, string>; projectPath?: string } = {}) {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.idem !== undefined) headers['idempotency-key'] = opts.idem;
  return api(t, 'POST', opts.projectPath ?? path, { key: opts.key ?? t.keys.ingest, body, headers });
}

async function expect400(body: unknown, param: string | undefined, opts: Parameters<typeof post>[1] = {}) {
  const before = count();
  const res = await post(body, opts);
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body).toMatchObject({ type: 'invalid_request_error', code: expect.any(String), message: expect.any(String) });
  if (param !== undefined) expect(res.body.param).toBe(param);
  expect(count()).toBe(before);
  return res;
}

async function expect201(body: unknown, opts: Parameters<typeof post>[1] = {}) {
  const res = await post(body, opts);
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res;
}

/** A flat metadata object whose JSON encoding is exactly `bytes` long (ASCII). */
function metadataOfEncodedSize(bytes: number): Record<string, string> {
  const m: Record<string, string> = {};
  for (let i = 0; i < 9; i++) m[`k${i}`] = 'x'.repeat(1900);
  const size = () => Buffer.byteLength(JSON.stringify(m));
  m.k8 = m.k8!.slice(0, m.k8!.length - (size() - bytes));
  if (size() !== bytes) throw new Error('metadata size arithmetic');
  return m;
}

describe('feedback.create', () => {
  it('accepts control characters; a NUL is kept (U+FFFD in PostgreSQL, whose text cannot hold one) and filters carrying it find the record', async () => {
    const res = await expect201({ message: 'a\u0000\u0001\u001fb', environment: 'env\u0000x' });
    const nul = t.s.config.databaseUrl ? '\ufffd' : '\u0000';
    expect(stored(res.body.id)).toMatchObject({ message: `a${nul}\u0001\u001fb`, environment: `env${nul}x` });
    for (const query of [`environment=${encodeURIComponent('env\u0000x')}`, `q=${encodeURIComponent('a\u0000\u0001')}`]) {
      const list = await api(t, 'GET', `${path}?${query}`, { key: t.keys.admin });
      expect(list.status, JSON.stringify(list.body)).toBe(200);
      expect(list.body.data.map((r: { id: string }) => r.id)).toEqual([res.body.id]);
    }
  });

  it('answers 201 with id, project_id and created_at only, not repeating the message or contact details', async () => {
    const res = await expect201({ message: 'Export is broken', contact_email: 'ana@example.com', name: 'Ana', user_id: 'u-1' });
    expect(Object.keys(res.body).sort()).toEqual(['created_at', 'id', 'project_id']);
    expect(res.body.project_id).toBe(t.projectId);
    expect(res.body.created_at).toBe(new Date(clock).toISOString());
    expect(stored(res.body.id)).toMatchObject({ message: 'Export is broken', status: 'new', contact_email: 'ana@example.com' });
  });

  it('also accepts the key as Authorization: Bearer', async () => {
    const res = await api(t, 'POST', path, { headers: { authorization: `Bearer ${t.keys.ingest}` }, body: { message: 'bearer' } });
    expect(res.status).toBe(201);
  });

  it('trims every text field before checking and storing it', async () => {
    const res = await expect201({
      message: '  spaced out \n',
      contact_email: '  ana@example.com ',
      name: ' Ana ',
      environment: ' production ',
      user_id: ' u-7 ',
      release: ' 1.2.3 ',
      service: ' web ',
      url: ' https://app.example.com/a ',
      session_id: ' s-1 ',
      replay_id: ' r-1 ',
    });
    expect(stored(res.body.id)).toMatchObject({
      message: 'spaced out',
      contact_email: 'ana@example.com',
      name: 'Ana',
      environment: 'production',
      user_id: 'u-7',
      release: '1.2.3',
      service: 'web',
      url: 'https://app.example.com/a',
      session_id: 's-1',
      replay_id: 'r-1',
    });
  });

  describe('message', () => {
    it('accepts 4,000 characters after trimming', async () => {
      const res = await expect201({ message: `   ${'m'.repeat(4000)}   ` });
      expect(stored(res.body.id).message).toHaveLength(4000);
    });
    it('rejects 4,001 characters', () => expect400({ message: 'm'.repeat(4001) }, 'message'));
    it('rejects a message that is empty after trimming', () => expect400({ message: ' \n\t ' }, 'message'));
    it('rejects a missing message', () => expect400({ name: 'Ana' }, 'message'));
    it('rejects a message that is not a string', () => expect400({ message: 42 }, 'message'));
  });

  describe('contact_email', () => {
    const email254 = `${'a'.repeat(64)}@${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(57)}.com`;
    it('accepts a valid address of 254 characters', async () => {
      expect(email254).toHaveLength(254);
      await expect201({ message: 'm', contact_email: email254 });
    });
    it('rejects 255 characters', () => expect400({ message: 'm', contact_email: `x${email254}` }, 'contact_email'));
    it('rejects text that is not an email address', () => expect400({ message: 'm', contact_email: 'ana at example' }, 'contact_email'));
  });

  describe.each([
    ['name', 128],
    ['environment', 128],
    ['user_id', 256],
    ['release', 256],
    ['service', 256],
    ['session_id', 128],
    ['replay_id', 128],
  ])('%s', (field, max) => {
    it(`accepts ${max} characters`, async () => {
      const res = await expect201({ message: 'm', [field]: 'v'.repeat(max) });
      expect((stored(res.body.id) as unknown as Record<string, string>)[field]).toHaveLength(max);
    });
    it(`rejects ${max + 1} characters`, () => expect400({ message: 'm', [field]: 'v'.repeat(max + 1) }, field));
  });

  describe('url', () => {
    it('accepts http and https URLs up to 2,048 characters', async () => {
      const long = 'https://example.com/' + 'p'.repeat(2048 - 'https://example.com/'.length);
      expect(long).toHaveLength(2048);
      await expect201({ message: 'm', url: long });
      await expect201({ message: 'm', url: 'http://localhost:3000/x?y=1' });
    });
    it('rejects 2,049 characters', () => expect400({ message: 'm', url: 'https://example.com/' + 'p'.repeat(2029) }, 'url'));
    it.each(['ftp://example.com/file', 'javascript:alert(1)', 'not a url', '/relative/path'])('rejects %s', async (url) => {
      await expect400({ message: 'm', url }, 'url');
    });
  });

  describe('trace_id', () => {
    it('accepts 32 hexadecimal characters', async () => {
      const res = await expect201({ message: 'm', trace_id: '0123456789ABCDEF0123456789abcdef' });
      expect(stored(res.body.id).trace_id?.toLowerCase()).toBe('0123456789abcdef0123456789abcdef');
    });
    it.each([['31 characters', 'a'.repeat(31)], ['33 characters', 'a'.repeat(33)], ['non-hex', 'g'.repeat(32)]])('rejects %s', async (_w, trace_id) => {
      await expect400({ message: 'm', trace_id }, 'trace_id');
    });
  });

  describe('error_group_id', () => {
    it('accepts an error group of the same project', async () => {
      const res = await expect201({ message: 'm', error_group_id: GROUP });
      expect(stored(res.body.id).error_group_id).toBe(GROUP);
    });
    it('rejects a valid UUID that names no error group', () => expect400({ message: 'm', error_group_id: randomUUID() }, 'error_group_id'));
    it('rejects an error group of another project', async () => {
      const res = await post({ message: 'm', error_group_id: GROUP }, { key: t.otherProject.adminKey, projectPath: `/v1/projects/${t.otherProject.projectId}/feedback` });
      expect(res.status).toBe(400);
      expect(res.body.param).toBe('error_group_id');
    });
    it('rejects a value that is not a UUID', () => expect400({ message: 'm', error_group_id: 'grp-1' }, 'error_group_id'));
  });

  describe('metadata', () => {
    it('accepts 32 flat fields of strings, finite numbers, booleans and null', async () => {
      const m: Record<string, unknown> = {};
      for (let i = 0; i < 29; i++) m[`f${i}`] = `v${i}`;
      Object.assign(m, { n: -1.5, b: false, z: null });
      const res = await expect201({ message: 'm', metadata: m });
      expect(stored(res.body.id).metadata).toEqual(m);
    });
    it('rejects 33 fields', async () => {
      const m = Object.fromEntries(Array.from({ length: 33 }, (_, i) => [`f${i}`, i]));
      await expect400({ message: 'm', metadata: m }, 'metadata');
    });
    it('accepts exactly 16 KiB of encoded JSON and rejects one byte more', async () => {
      await expect201({ message: 'm', metadata: metadataOfEncodedSize(16 * 1024) });
      await expect400({ message: 'm', metadata: metadataOfEncodedSize(16 * 1024 + 1) }, 'metadata');
    });
    it('accepts keys of 1 to 64 characters', async () => {
      await expect201({ message: 'm', metadata: { k: 1, ['k'.repeat(64)]: 2 } });
    });
    it('rejects an empty key', () => expect400({ message: 'm', metadata: { '': 1 } }, undefined));
    it('rejects a key of 65 characters', () => expect400({ message: 'm', metadata: { ['k'.repeat(65)]: 1 } }, undefined));
    it('accepts a string value of 2,048 characters and rejects 2,049', async () => {
      await expect201({ message: 'm', metadata: { s: 'x'.repeat(2048) } });
      await expect400({ message: 'm', metadata: { s: 'x'.repeat(2049) } }, 'metadata.s');
    });
    it('rejects a non-finite number', async () => {
      const res = await api(t, 'POST', path, { key: t.keys.ingest, rawBody: '{"message":"m","metadata":{"big":1e400}}' });
      expect(res.status).toBe(400);
      expect(res.body.param).toBe('metadata.big');
    });
    it('rejects a nested object', () => expect400({ message: 'm', metadata: { o: { a: 1 } } }, 'metadata.o'));
    it('rejects an array value', () => expect400({ message: 'm', metadata: { a: [1, 2] } }, 'metadata.a'));
    it('rejects metadata that is not an object', async () => {
      await expect400({ message: 'm', metadata: [1, 2] }, 'metadata');
      await expect400({ message: 'm', metadata: 'flat' }, 'metadata');
    });
  });

  describe('body', () => {
    it('rejects unknown top-level fields, naming the field', async () => {
      const res = await expect400({ message: 'm', mesage: 'typo' }, 'mesage');
      expect(res.body.code).toBe('unknown_field');
      await expect400({ message: 'm', status: 'archived' }, 'status');
    });

    it('answers 413 to a body above 32 KiB (declared length)', async () => {
      const before = count();
      const big = JSON.stringify({ message: 'm', metadata: { pad: 'x'.repeat(100) } }) + ' '.repeat(32 * 1024);
      const res = await api(t, 'POST', path, { key: t.keys.ingest, rawBody: big });
      expect(res.status).toBe(413);
      expect(res.body).toMatchObject({ type: 'invalid_request_error', code: 'payload_too_large', message: expect.any(String) });
      expect(count()).toBe(before);
    });

    it('answers 413 to a chunked body that grows above 32 KiB', async () => {
      const chunk = new TextEncoder().encode(' '.repeat(4096));
      let sent = 0;
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent === 0) controller.enqueue(new TextEncoder().encode('{"message":"m"'));
          if (sent++ < 10) controller.enqueue(chunk);
          else {
            controller.enqueue(new TextEncoder().encode('}'));
            controller.close();
          }
        },
      });
      const res = await fetch(t.url + path, {
        method: 'POST',
        headers: { 'x-service-key': t.keys.ingest, 'content-type': 'application/json' },
        body: stream,
        duplex: 'half',
      } as RequestInit);
      expect(res.status).toBe(413);
      expect(((await res.json()) as { code: string }).code).toBe('payload_too_large');
    });

    it('accepts a body of exactly 32 KiB', async () => {
      const core = JSON.stringify({ message: 'm' });
      const body = core.slice(0, -1) + ' '.repeat(32 * 1024 - core.length) + '}';
      expect(Buffer.byteLength(body)).toBe(32 * 1024);
      const res = await api(t, 'POST', path, { key: t.keys.ingest, rawBody: body });
      expect(res.status).toBe(201);
    });

    it('rejects a body that is not a JSON object', async () => {
      for (const rawBody of ['not json', '[1,2]', '"text"']) {
        const res = await api(t, 'POST', path, { key: t.keys.ingest, rawBody });
        expect(res.status, rawBody).toBe(400);
        expect(res.body.type).toBe('invalid_request_error');
      }
    });
  });

  describe('scopes', () => {
    it.each([['read'], ['write'], ['errors:write'], ['errors:read'], ['read', 'write', 'errors:write']])(
      'refuses a key holding %s (feedback capture needs events:ingest)',
      async (...scopes: string[]) => {
        const before = count();
        const res = await post({ message: 'm' }, { key: t.mintKey(scopes) });
        expect(res.status).toBe(403);
        expect(res.body).toMatchObject({ type: 'permission_error', code: 'insufficient_scope' });
        expect(count()).toBe(before);
      },
    );

    it('accepts a key holding events:ingest only, or *', async () => {
      await expect201({ message: 'm' }, { key: t.mintKey(['events:ingest']) });
      await expect201({ message: 'm' }, { key: t.keys.admin });
    });

    it('refuses a key of another project with 404, as if the project did not exist', async () => {
      const before = count();
      const res = await post({ message: 'm' }, { key: t.mintKey(['events:ingest'], t.otherProject.projectId) });
      expect(res.status).toBe(404);
      expect(count()).toBe(before);
    });
  });
});

describe('Idempotency-Key', () => {
  it('returns the original 201 (same id) for the same key and payload', async () => {
    const key = `idem-${randomUUID()}`;
    const first = await expect201({ message: 'once', name: 'Ana' }, { idem: key });
    const before = count();
    clock += 5_000;
    // Same payload: key order and surrounding spaces do not make it different.
    const again = await expect201({ name: ' Ana', message: 'once ' }, { idem: key });
    expect(again.body).toEqual(first.body);
    expect(count()).toBe(before);
  });

  it('uses no quota for replays, even when the quota is exhausted', async () => {
    const key = `idem-${randomUUID()}`;
    const first = await expect201({ message: 'first' }, { idem: key });
    for (let i = 0; i < 19; i++) await expect201({ message: `fill ${i}` });
    expect((await post({ message: 'one too many' })).status).toBe(429);
    for (let i = 0; i < 3; i++) {
      const replay = await post({ message: 'first' }, { idem: key });
      expect(replay.status).toBe(201);
      expect(replay.body.id).toBe(first.body.id);
    }
  });

  it('answers 409 to the same key with a different payload and stores nothing', async () => {
    const key = `idem-${randomUUID()}`;
    await expect201({ message: 'original' }, { idem: key });
    const before = count();
    const res = await post({ message: 'changed' }, { idem: key });
    expect(res.status).toBe(409);
    expect(res.body).toMatchObject({ type: 'conflict_error', code: 'idempotency_conflict', message: expect.any(String) });
    expect(count()).toBe(before);
  });

  it('is scoped to the project', async () => {
    const key = `idem-${randomUUID()}`;
    const mine = await expect201({ message: 'same' }, { idem: key });
    const theirs = await post({ message: 'same' }, { idem: key, key: t.otherProject.adminKey, projectPath: `/v1/projects/${t.otherProject.projectId}/feedback` });
    expect(theirs.status).toBe(201);
    expect(theirs.body.id).not.toBe(mine.body.id);
  });

  it('accepts 1 and 128 printable ASCII characters', async () => {
    await expect201({ message: 'm' }, { idem: '~' });
    await expect201({ message: 'm' }, { idem: `${randomUUID()}${'!'.repeat(92)}` });
  });

  it.each([
    ['129 characters', 'k'.repeat(129)],
    ['a tab', 'a\tb'],
    ['a non-ASCII character', 'caf\u00e9'],
  ])('rejects a key with %s', async (_what, idem) => {
    const res = await expect400({ message: 'm' }, 'idempotency_key', { idem });
    expect(res.body.message).toMatch(/printable ASCII/);
  });
});

describe('feedback quota', () => {
  it('allows 20 records per rolling minute and answers 429 with Retry-After until capacity returns', async () => {
    const start = clock;
    for (let i = 0; i < 20; i++) {
      clock = start + i * 1000;
      await expect201({ message: `n${i}` });
    }
    clock = start + 30_000;
    const before = count();
    const limited = await post({ message: 'over' });
    expect(limited.status).toBe(429);
    expect(limited.headers.get('retry-after')).toBe('30');
    expect(limited.body).toMatchObject({ type: 'rate_limit_error', code: 'feedback_quota_exceeded', retry_after: 30, doc_url: expect.any(String) });
    expect(count()).toBe(before);

    // The window rolls: when the oldest record is a minute old, exactly one more fits.
    clock = start + 59_999;
    expect((await post({ message: 'still over' })).headers.get('retry-after')).toBe('1');
    clock = start + 60_000;
    await expect201({ message: 'first slot back' });
    const next = await post({ message: 'over again' });
    expect(next.status).toBe(429);
    expect(next.headers.get('retry-after')).toBe('1');
    clock = start + 61_000;
    await expect201({ message: 'second slot back' });
  });

  it('is shared by all keys of the project and not by other projects', async () => {
    const a = t.mintKey(['events:ingest']);
    const b = t.mintKey(['events:ingest']);
    for (let i = 0; i < 10; i++) await expect201({ message: `a${i}` }, { key: a });
    for (let i = 0; i < 10; i++) await expect201({ message: `b${i}` }, { key: b });
    expect((await post({ message: 'a over' }, { key: a })).status).toBe(429);
    expect((await post({ message: 'b over' }, { key: b })).status).toBe(429);
    expect((await post({ message: 'ingest over' })).status).toBe(429);
    const other = await post({ message: 'other project' }, { key: t.otherProject.adminKey, projectPath: `/v1/projects/${t.otherProject.projectId}/feedback` });
    expect(other.status).toBe(201);
  });

  it('allows 1,000 records per rolling day', async () => {
    // Isolated server: this test fills a whole day.
    let c = Date.parse('2026-04-01T00:00:00.000Z');
    const d = await startTestServer({ now: () => c });
    try {
      const url = `/v1/projects/${d.projectId}/feedback`;
      const send = (message: string) => api(d, 'POST', url, { key: d.keys.ingest, body: { message } });
      const first = c;
      // 49 minutes of 20 records straight through the repository (fast), the 50th minute over HTTP.
      for (let minute = 0; minute < 49; minute++) {
        for (let i = 0; i < 20; i++) {
          d.s.services.feedback.insert(d.projectId, {
            id: randomUUID(), message: `m${minute}-${i}`, contact_email: null, name: null, environment: null, user_id: null, release: null,
            service: null, url: null, session_id: null, replay_id: null, trace_id: null, error_group_id: null, metadata: null, source: 'api',
            created_at: first + minute * 61_000,
          });
        }
      }
      c = first + 49 * 61_000;
      const res = await Promise.all(Array.from({ length: 20 }, (_, i) => send(`m49-${i}`)));
      expect(res.map((r) => r.status)).toEqual(Array(20).fill(201));
      c += 61_000; // the minute window is empty again; the day window is full
      const limited = await send('over the day');
      expect(limited.status).toBe(429);
      const expected = Math.ceil((first + 86_400_000 - c) / 1000);
      expect(limited.headers.get('retry-after')).toBe(String(expected));
      expect(limited.body.retry_after).toBe(expected);

      c = first + 86_400_000 - 1000;
      expect((await send('still over')).status).toBe(429);
      c = first + 86_400_000; // the first minute's 20 records leave the day window
      expect((await send('back')).status).toBe(201);
    } finally {
      await d.close();
    }
  });
});

describe('cross-origin feedback capture', () => {
  it('answers an OPTIONS preflight with 204 and CORS headers, without a key', async () => {
    const res = await fetch(t.url + path, {
      method: 'OPTIONS',
      headers: { origin: 'https://shop.example', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, x-service-key, idempotency-key' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-methods')).toMatch(/POST/);
    const allowed = res.headers.get('access-control-allow-headers')!.toLowerCase();
    for (const h of ['content-type', 'x-service-key', 'idempotency-key', 'authorization']) expect(allowed).toContain(h);
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });

  it('answers the POST with Access-Control-Allow-Origin * and never allows credentials', async () => {
    const res = await post({ message: 'from a browser' }, { headers: { origin: 'https://shop.example' } });
    expect(res.status).toBe(201);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
    expect(res.headers.get('access-control-expose-headers')!.toLowerCase()).toContain('retry-after');
  });

  it('lets a browser read Retry-After and the error body of a refused POST', async () => {
    for (let i = 0; i < 20; i++) await expect201({ message: `fill ${i}` });
    const res = await post({ message: 'over' }, { headers: { origin: 'https://shop.example' } });
    expect(res.status).toBe(429);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('retry-after')).toBeTruthy();
    const bad = await post({ message: '' }, { headers: { origin: 'https://shop.example' } });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('a rejected feedback request', () => {
  it('changes nothing: no record, no idempotency reservation', async () => {
    const feedbackBefore = count();
    const idemCount = () => (t.s.db.prepare('SELECT COUNT(*) AS n FROM feedback_idempotency').get() as { n: number }).n;
    const idemBefore = idemCount();
    const key = `idem-${randomUUID()}`;
    expect((await post({ message: '' }, { idem: key })).status).toBe(400);
    expect((await post({ message: 'm', bogus: 1 }, { idem: key })).status).toBe(400);
    expect((await post({ message: 'm' }, { idem: key, key: t.mintKey(['read']) })).status).toBe(403);
    expect((await api(t, 'POST', path, { body: { message: 'm' } })).status).toBe(401);
    expect(count()).toBe(feedbackBefore);
    expect(idemCount()).toBe(idemBefore);
    // The key was never reserved: a first valid use now succeeds with any payload.
    await expect201({ message: 'finally' }, { idem: key });
  });
});
