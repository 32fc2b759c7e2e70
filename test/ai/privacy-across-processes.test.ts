/**
 * Issue 20: privacy mode is read once per process and cached; a project turning it on through one
 * process must have content withheld by every other process from its next batch (not after a restart).
 * Two servers over the same stores: the SQLite file, or PostgreSQL + ClickHouse in the scale-out project.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { startSecondServer, type SecondServer } from '../support/second-server.js';

let t: TestServer;
let second: SecondServer;
let P: string;

beforeAll(async () => {
  t = await startTestServer();
  second = await startSecondServer(t);
  P = `/v1/projects/${t.projectId}`;
});
afterAll(async () => {
  await second.close();
  await t.close();
});

const on = (url: string) => ({ ...t, url });
const span = (spanId: string, secret: string) => {
  const now = BigInt(Date.now()) * 1_000_000n;
  return {
    resourceSpans: [
      {
        resource: { attributes: [] },
        scopeSpans: [
          {
            scope: { name: 'x' },
            spans: [
              {
                traceId: `0af7651916cd43dd8448eb21${spanId.slice(0, 8)}`,
                spanId,
                name: 'chat gpt-4o',
                kind: 3,
                startTimeUnixNano: String(now - 2_000_000_000n),
                endTimeUnixNano: String(now - 1_000_000_000n),
                attributes: [
                  { key: 'gen_ai.operation.name', value: { stringValue: 'chat' } },
                  { key: 'gen_ai.request.model', value: { stringValue: 'gpt-4o' } },
                  { key: 'gen_ai.input.messages', value: { stringValue: `[{"role":"user","parts":[{"type":"text","content":"${secret}"}]}]` } },
                ],
              },
            ],
          },
        ],
      },
    ],
  };
};

it('is seen by another process on its next batch once a project turns it on or off', async () => {
  const other = on(second.url);
  // The second process reads (and caches) the setting: off.
  expect((await api(other, 'GET', `${P}/ai/settings`, { key: t.keys.admin })).body).toEqual({ privacy_mode: false });
  expect((await api(other, 'POST', '/ingest/v1/traces', { key: t.keys.ingest, body: span('a1a1a1a1a1a1a1a1', 'visible one') })).status).toBe(200);

  // Turned on through the first process: the second withholds the next span's content.
  expect((await api(t, 'PATCH', `${P}/ai/settings`, { key: t.keys.admin, body: { privacy_mode: true } })).body).toEqual({ privacy_mode: true });
  expect((await api(other, 'GET', `${P}/ai/settings`, { key: t.keys.admin })).body).toEqual({ privacy_mode: true });
  expect((await api(other, 'POST', '/ingest/v1/traces', { key: t.keys.ingest, body: span('b2b2b2b2b2b2b2b2', 'my password is hunter2') })).status).toBe(200);
  const o = await api(t, 'GET', `${P}/agent-observations/b2b2b2b2b2b2b2b2`, { key: t.keys.admin });
  expect(o.status).toBe(200);
  expect(o.body.input_json).toEqual({ redacted: true, reason: 'privacy_mode' });
  expect(JSON.stringify(o.body)).not.toContain('hunter2');

  // And off again: content is kept.
  await api(t, 'PATCH', `${P}/ai/settings`, { key: t.keys.admin, body: { privacy_mode: false } });
  expect((await api(other, 'POST', '/ingest/v1/traces', { key: t.keys.ingest, body: span('c3c3c3c3c3c3c3c3', 'visible three') })).status).toBe(200);
  const c = await api(t, 'GET', `${P}/agent-observations/c3c3c3c3c3c3c3c3`, { key: t.keys.admin });
  expect(JSON.stringify(c.body.input_json)).toContain('visible three');
});
