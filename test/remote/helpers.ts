/**
 * Helpers for the remote-access tests: people who can sign in to the console (email + password),
 * enabling the preview as an owner, a test-side connector that signs its calls like the real one,
 * a cookie-keeping console client over plain fetch, and the step-up code read from the outbox.
 */
import { randomUUID } from 'node:crypto';
import { api, type TestServer } from '../helpers/server.js';
import { hashPassword } from '../../src/domain/identity/secrets.js';
import { readOutbox } from '../../src/core/mail.js';
import { newKeyPair, rawPublicKey, signB64, signingString, openEnvelope, publicKeyFromRaw } from '../../src/domain/remote/signing.js';
import type { KeyObject } from 'node:crypto';

export const P = (t: TestServer) => `/v1/projects/${t.projectId}/remote-access`;

export interface ConsoleUser {
  email: string;
  password: string;
  userId: string;
}

export function consoleUser(t: TestServer, role: 'owner' | 'admin' | 'member'): ConsoleUser {
  const email = `${role}-${randomUUID().slice(0, 8)}@people.test`;
  const password = `pw-${randomUUID()}`;
  const u = t.s.services.identity.createUser(email, `${role} person`, hashPassword(password), t.s.core.now());
  t.s.services.identity.addMembership(t.organizationId, u.id, role, t.s.core.now());
  return { email, password, userId: u.id };
}

/** Enables the preview the only way there is: an owner's user credential. */
export async function enablePreview(t: TestServer): Promise<void> {
  const owner = t.mintUserToken({ role: 'owner', scopes: ['project:write'] });
  const r = await api(t, 'PUT', `${P(t)}/preview`, { headers: { authorization: `Bearer ${owner.token}` }, body: { enabled: true } });
  if (r.status !== 200) throw new Error(`enable preview: ${r.status} ${JSON.stringify(r.body)}`);
}

/** The newest step-up code mailed to `email` (the mail job is run first). */
export async function stepUpCode(t: TestServer, email: string): Promise<string> {
  await t.s.services.scheduler.runDue();
  const mail = readOutbox(t.s.config.mail.outboxFile).filter((m) => m.to === email).at(-1);
  const m = mail && /code is (\d{8})/.exec(mail.text);
  if (!m) throw new Error(`no step-up code mailed to ${email}`);
  return m[1]!;
}

/** A connector played by the test: the same signed protocol as `sightline connector run`. */
export class TestConnector {
  id = '';
  serverKey: KeyObject | null = null;
  private key: KeyObject;
  public pub: string;
  constructor(private t: TestServer) {
    const k = newKeyPair();
    this.key = k.privateKey;
    this.pub = rawPublicKey(k.publicKey);
  }
  async enroll(code: string) {
    const r = await api(this.t, 'POST', '/v1/remote-connector/enroll', { body: { code, public_key: this.pub, runner_version: 'test-1' } });
    if (r.status === 200) {
      this.id = r.body.connector_id;
      this.serverKey = publicKeyFromRaw(r.body.server_public_key);
    }
    return r;
  }
  async signed(path: string, body: unknown, key: KeyObject = this.key, ts = String(Date.now())) {
    const raw = JSON.stringify(body);
    return api(this.t, 'POST', path, {
      rawBody: raw,
      headers: { 'content-type': 'application/json', 'x-sightline-connector': this.id, 'x-sightline-timestamp': ts, 'x-sightline-signature': signB64(key, signingString('POST', path, ts, raw)) },
    });
  }
  async poll() {
    const r = await this.signed('/v1/remote-connector/poll', {});
    const jobs = r.status === 200 ? (r.body.jobs as string[]).map((j) => openEnvelope<any>(this.serverKey!, j)) : [];
    return { ...r, jobs };
  }
  async rotate() {
    const old = this.key;
    const k = newKeyPair();
    const r = await this.signed('/v1/remote-connector/rotate', { public_key: rawPublicKey(k.publicKey) }, old);
    if (r.status === 200) {
      this.key = k.privateKey;
      this.pub = rawPublicKey(k.publicKey);
    }
    return { r, old };
  }
}

export const DIGEST = 'SHA256:' + Buffer.alloc(32, 7).toString('base64').replace(/=+$/, '');

/** Console over plain fetch, keeping its cookies: what a browser without JavaScript does. */
export class ConsoleClient {
  private jar = new Map<string, string>();
  constructor(private t: TestServer) {}
  private cookieHeader() {
    return [...this.jar].map(([k, v]) => `${k}=${v}`).join('; ');
  }
  async request(method: string, path: string, form?: Record<string, string>, headers: Record<string, string> = {}) {
    const res = await fetch(this.t.url + path, {
      method,
      redirect: 'manual',
      headers: { cookie: this.cookieHeader(), ...(form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}), ...headers },
      body: form ? new URLSearchParams(form).toString() : undefined,
    });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const i = pair!.indexOf('=');
      this.jar.set(pair!.slice(0, i), pair!.slice(i + 1));
    }
    return { status: res.status, html: await res.text(), headers: res.headers };
  }
  csrf(html: string): string {
    return /name="csrf_token" value="([^"]+)"/.exec(html)![1]!;
  }
  async signIn(u: ConsoleUser) {
    const page = await this.request('GET', '/console/remote-access');
    return this.request('POST', '/console/remote-access/sign-in', { csrf_token: this.csrf(page.html), email: u.email, password: u.password });
  }
  async projectPage() {
    return this.request('GET', `/console/remote-access/projects/${this.t.projectId}`);
  }
  async stepUp(action: string, subjectId: string) {
    const page = await this.projectPage();
    return this.request('POST', `/console/remote-access/projects/${this.t.projectId}/step-up`, { csrf_token: this.csrf(page.html), action, subject_id: subjectId });
  }
  async act(action: string, subjectId: string, code: string, extra: Record<string, string> = {}) {
    const page = await this.projectPage();
    return this.request('POST', `/console/remote-access/projects/${this.t.projectId}/act`, { csrf_token: this.csrf(page.html), action, subject_id: subjectId, code, ...extra });
  }
}

/** Creates a connector, enrolls the test connector, creates a target, verifies it with `digest` and confirms it as `owner` in the console. */
export async function enabledTarget(t: TestServer, owner: ConsoleUser, policy?: unknown) {
  const conn = await api(t, 'POST', `${P(t)}/connectors`, { key: t.keys.admin, body: { label: 'site A' } });
  const c = new TestConnector(t);
  await c.enroll(conn.body.enrollment_code);
  const target = await api(t, 'POST', `${P(t)}/targets`, { key: t.keys.admin, body: { label: 'web 1', environment: 'production', connector_id: c.id, auth_profile_id: 'web-1', ...(policy ? { policy } : {}) } });
  const v = await api(t, 'POST', `${P(t)}/targets/${target.body.id}/verification-requests`, { key: t.keys.admin, body: {} });
  const poll = await c.poll();
  const job = poll.jobs.find((j) => j.type === 'verify')!;
  await c.signed('/v1/remote-connector/results', { type: 'verify', target_id: job.target_id, verification_id: job.verification_id, ok: true, host_key_sha256: DIGEST, runner_version: 'test-1' });
  const cc = new ConsoleClient(t);
  await cc.signIn(owner);
  await cc.stepUp('confirm_target', target.body.id);
  const done = await cc.act('confirm_target', target.body.id, await stepUpCode(t, owner.email), { verification_id: v.body.verification_id, host_key_sha256: DIGEST });
  if (done.status !== 200) throw new Error(`confirm: ${done.status} ${done.html}`);
  return { connector: c, targetId: target.body.id as string, verificationId: v.body.verification_id as string };
}
