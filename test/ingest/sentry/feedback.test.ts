/**
 * Sentry feedback under the same rules as REST feedback.create (issue 10, item 7), sent by the real
 * @sentry/node SDK: over quota the SDK is told (429 + X-Sentry-Rate-Limits for `feedback`) and backs
 * off; an invalid contact email is dropped and counted while the feedback is kept; a message over
 * 4,000 characters is refused and counted, as REST refuses it.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../../helpers/server.js';

const run = promisify(execFile);

describe('Sentry feedback from the real SDK', () => {
  let t: TestServer;
  // One SDK run: a bad email, a too-long message, a 4,000-character one, then 20 more (the quota is 20 a minute).
  const sent = [
    { message: 'bad email', email: 'not an email' },
    { message: 'm'.repeat(4001) },
    { message: 'm'.repeat(4000) },
    ...Array.from({ length: 20 }, (_, i) => ({ message: `feedback number ${i}` })),
  ];
  beforeAll(async () => {
    t = await startTestServer();
    const dsn = `http://${t.keys.ingest}@${new URL(t.url).host}/ingest/${t.projectId}`;
    await run(process.execPath, [join(import.meta.dirname, 'fixtures/feedback-flood.mjs')], { env: { ...process.env, SENTRY_DSN: dsn, FEEDBACKS: JSON.stringify(sent) }, timeout: 60_000 });
  });
  afterAll(() => t.close());
  const outcome = (reason: string) =>
    (t.s.db.prepare("SELECT SUM(quantity) n FROM ingest_outcomes WHERE project_id = ? AND category = 'feedback' AND reason = ?").get(Number(t.projectId), reason) as { n: number | null }).n ?? 0;
  const feedback = () => t.s.db.prepare('SELECT message, contact_email FROM feedback WHERE project_id = ? ORDER BY created_at').all(Number(t.projectId)) as { message: string; contact_email: string | null }[];

  it('keeps a feedback whose contact email is invalid, without the email, and counts the dropped field', () => {
    expect(feedback().find((f) => f.message === 'bad email')).toEqual({ message: 'bad email', contact_email: null });
    expect(outcome('invalid_contact_email')).toBe(1);
  });

  it('refuses a message over 4,000 characters as REST does, keeps one of exactly 4,000, and counts the refusal', async () => {
    const messages = feedback().map((f) => f.message.length);
    expect(messages).toContain(4000);
    expect(messages).not.toContain(4001);
    expect(outcome('message_too_long')).toBe(1);
    const rest = await fetch(`${t.url}/v1/projects/${t.projectId}/feedback`, {
      method: 'POST',
      headers: { 'x-service-key': t.keys.ingest, 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'm'.repeat(4001) }),
    });
    expect(rest.status).toBe(400);
  });

  it('answers feedback over quota with 429 and X-Sentry-Rate-Limits for feedback, so the SDK stops sending', async () => {
    expect(feedback()).toHaveLength(20);
    // The first feedback over the quota was refused with the rate limit; the SDK honoured it and did not send the last one.
    expect(outcome('rate_limited')).toBe(1);

    const r = await fetch(`${t.url}/ingest/api/${t.projectId}/envelope/?sentry_key=${t.keys.ingest}`, {
      method: 'POST',
      body: `{}\n{"type":"feedback"}\n${JSON.stringify({ contexts: { feedback: { message: 'one more' } } })}\n`,
    });
    expect(r.status).toBe(429);
    expect(r.headers.get('x-sentry-rate-limits')).toMatch(/^\d+:feedback:project:feedback_quota_exceeded$/);
    expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
