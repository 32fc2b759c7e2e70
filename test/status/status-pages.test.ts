/**
 * Status pages over REST (all 11 statusPages operations) and their public faces: /status/{slug} as
 * HTML, .json and Atom, custom domains through the Host header, private pages 404 to strangers, and
 * email subscription with double opt-in and incident mail through the outbox file.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import { api, startTestServer, type TestServer } from '../helpers/server.js';
import { readOutbox } from '../../src/core/mail.js';

let t: TestServer;
let clock = Date.parse('2026-04-01T08:00:00Z');
const P = () => `/v1/projects/${t.projectId}`;
const admin = (method: string, path: string, body?: unknown) => api(t, method, P() + path, { key: t.keys.admin, body });

let pageId: string;
let apiMonitor: string;
let dbMonitor: string;

beforeAll(async () => {
  t = await startTestServer({ now: () => clock, config: { monitors: { allowPrivate: '127.0.0.1', retentionDays: 90 } } });
  apiMonitor = (await admin('POST', '/monitors', { name: 'API health', kind: 'http', url: 'http://127.0.0.1:9/health' })).body.id;
  dbMonitor = (await admin('POST', '/monitors', { name: 'Database', kind: 'http', url: 'http://127.0.0.1:9/db' })).body.id;
  // No real checks here (test/status/uptime-monitors.test.ts runs those): states are fed by result() below.
  for (const id of [apiMonitor, dbMonitor]) t.s.services.scheduler.cancel('monitor.check', id);
});
afterAll(() => t.close());

/** Feeds a result as a check would (the uptime test covers real checks). */
function result(monitorId: string, status: 'up' | 'down' | 'degraded') {
  const svc = t.s.services;
  const events = svc.atomic(() => svc.monitoring.applyResult(svc.monitors.get(t.projectId, monitorId)!, { status, at: clock, http_status: status === 'down' ? 503 : 200 }));
  svc.monitoring.publish(events);
}

describe('status pages API', () => {
  it('creates a page and refuses a taken slug, a bad slug and unknown fields', async () => {
    const r = await admin('POST', '/status-pages', { name: 'Acme', slug: 'acme', isPublic: true, themeConfig: { accentColor: '#1d39c4' } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ name: 'Acme', slug: 'acme', isPublic: true, customDomain: null, themeConfig: { accentColor: '#1d39c4' }, url: `${t.s.config.baseUrl}/status/acme`, components: [], counts: { components: 0, subscribers: 0 } });
    pageId = r.body.id;
    expect((await admin('POST', '/status-pages', { name: 'Again', slug: 'acme' })).body.code).toBe('slug_taken');
    const other = await api(t, 'POST', `/v1/projects/${t.otherProject.projectId}/status-pages`, { key: t.otherProject.adminKey, body: { name: 'Other', slug: 'acme' } });
    expect(other.status).toBe(409);
    expect((await admin('POST', '/status-pages', { name: 'Bad', slug: 'Not OK!' })).body).toMatchObject({ code: 'invalid_parameter', param: 'slug' });
    expect((await admin('POST', '/status-pages', { name: 'X', slug: 'x', colour: 1 })).status).toBe(400);
    expect((await admin('POST', '/status-pages', { name: 'X', slug: 'x', themeConfig: { accentColor: 'red;}' } })).status).toBe(400);
  });

  it('builds monitor, static and group components, links monitors by name or id and rolls health up', async () => {
    const group = (await admin('POST', `/status-pages/${pageId}/components`, { kind: 'group', name: 'Backend' })).body;
    const apiC = (await admin('POST', `/status-pages/${pageId}/components`, { kind: 'monitor', name: 'API', parent_id: group.id, monitor_name: 'API health' })).body;
    expect(apiC).toMatchObject({ kind: 'monitor', parent_id: group.id, monitor_id: apiMonitor, monitor_name: 'API health', health: 'operational' });
    const dbC = (await admin('POST', `/status-pages/${pageId}/components`, { kind: 'monitor', name: 'Database', parent_id: group.id })).body;
    expect(dbC).toMatchObject({ monitor_id: null, health: 'unknown' });
    expect((await admin('POST', `/status-pages/${pageId}/components/${dbC.id}/link-monitor`, { monitor_id: dbMonitor })).body).toMatchObject({ monitor_id: dbMonitor, health: 'operational' });
    const cdn = (await admin('POST', `/status-pages/${pageId}/components`, { kind: 'static', name: 'CDN', status: 'operational', external_url: 'https://www.cloudflarestatus.com/' })).body;
    expect(cdn).toMatchObject({ kind: 'static', status: 'operational', external_url: 'https://www.cloudflarestatus.com/', health: 'operational' });

    result(dbMonitor, 'degraded');
    let page = (await admin('GET', `/status-pages/${pageId}`)).body;
    const health = (name: string) => page.components.find((c: { name: string }) => c.name === name).health;
    expect([health('Database'), health('Backend'), page.health]).toEqual(['degraded', 'degraded', 'degraded']);
    result(apiMonitor, 'down');
    page = (await admin('GET', `/status-pages/${pageId}`)).body;
    expect([health('API'), health('Backend'), health('CDN'), page.health]).toEqual(['down', 'down', 'operational', 'down']);
    expect(page.counts).toMatchObject({ components: 4, monitor_components: 2, groups: 1 });

    // Wrong kinds and bad links are refused and change nothing.
    expect((await admin('POST', `/status-pages/${pageId}/components/${cdn.id}/link-monitor`, { monitor_id: apiMonitor })).body.code).toBe('invalid_component_kind');
    expect((await admin('POST', `/status-pages/${pageId}/components/${apiC.id}/link-monitor`, { monitor_name: 'nope' })).status).toBe(404);
    expect((await admin('POST', `/status-pages/${pageId}/components/${apiC.id}/link-monitor`, {})).status).toBe(400);
    expect((await admin('POST', `/status-pages/${pageId}/components`, { kind: 'group', name: 'Nested', parent_id: group.id })).status).toBe(400);
    expect((await admin('POST', `/status-pages/${pageId}/components/${apiC.id}/unlink-monitor`, { monitor_name: 'Database' })).body.code).toBe('monitor_not_linked');
  });

  it('moves a component out of and back into a group, unlinks by name and deletes without touching monitors', async () => {
    const comps = (await admin('GET', `/status-pages/${pageId}/components`)).body.data;
    const group = comps.find((c: { kind: string }) => c.kind === 'group');
    const db = comps.find((c: { name: string }) => c.name === 'Database');
    expect((await admin('PATCH', `/status-pages/${pageId}/components/${db.id}`, { parent_id: null })).body.parent_id).toBeNull();
    expect((await admin('PATCH', `/status-pages/${pageId}/components/${db.id}`, { parent_id: group.id, description: 'Primary cluster' })).body).toMatchObject({ parent_id: group.id, description: 'Primary cluster' });
    expect((await admin('POST', `/status-pages/${pageId}/components/${db.id}/unlink-monitor`, { monitor_name: 'Database' })).body).toMatchObject({ monitor_id: null, health: 'unknown' });
    await admin('POST', `/status-pages/${pageId}/components/${db.id}/link-monitor`, { monitor_name: 'Database' });
    const temp = (await admin('POST', `/status-pages/${pageId}/components`, { kind: 'monitor', name: 'Temp', monitor_id: dbMonitor })).body;
    expect((await admin('DELETE', `/status-pages/${pageId}/components/${temp.id}`)).body).toEqual({ id: temp.id, deleted: true });
    expect((await admin('GET', `/monitors/${dbMonitor}`)).status).toBe(200);
    expect((await admin('GET', `/status-pages/${pageId}/components`)).body.data.map((c: { id: string }) => c.id)).not.toContain(temp.id);
  });

  it('lists pages with components and counts, and hides them from other projects', async () => {
    const list = (await admin('GET', '/status-pages')).body;
    expect(list).toMatchObject({ total: 1, data: [{ id: pageId, counts: { components: 4 } }] });
    expect(list.data[0].components).toHaveLength(4);
    expect((await api(t, 'GET', `/v1/projects/${t.otherProject.projectId}/status-pages/${pageId}`, { key: t.otherProject.adminKey })).status).toBe(404);
    expect((await api(t, 'PATCH', `/v1/projects/${t.otherProject.projectId}/status-pages/${pageId}`, { key: t.otherProject.adminKey, body: { name: 'x' } })).status).toBe(404);
    const readOnly = t.mintKey(['read']);
    expect((await api(t, 'PATCH', `${P()}/status-pages/${pageId}`, { key: readOnly, body: { name: 'x' } })).status).toBe(403);
  });
});

describe('the public page', () => {
  it('serves HTML with the overall state, components, uptime bars and the open incident', async () => {
    const res = await fetch(`${t.url}/status/acme`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-security-policy')).toContain("frame-ancestors 'none'");
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect(res.headers.get('x-frame-options')).toBe('DENY');
    expect(res.headers.get('referrer-policy')).toBe('no-referrer');
    const html = await res.text();
    expect(html).not.toContain('<script');
    expect(html).toContain('Some systems are down');
    for (const name of ['Backend', 'API', 'Database', 'CDN']) expect(html).toContain(`data-component="${name}"`);
    expect(html.match(/class="bar /g)?.length ?? 0).toBe(0); // monitor components sit inside the group: bars only for top-level monitors
    expect(html).toContain('API health is down');
    expect(html).toMatch(/INC-\d+/);
  });

  it('serves JSON and an Atom feed of incidents', async () => {
    const json: any = await (await fetch(`${t.url}/status/acme.json`)).json();
    expect(json).toMatchObject({ page: { name: 'Acme', slug: 'acme' }, status: 'down' });
    expect(json.components.map((c: { name: string }) => c.name)).toEqual(['Backend', 'CDN']);
    expect(json.components[0].children.map((c: { name: string; health: string }) => [c.name, c.health])).toEqual([['API', 'down'], ['Database', 'degraded']]);
    expect(json.incidents[0]).toMatchObject({ title: 'API health is down', status: 'investigating' });
    const feed = await fetch(`${t.url}/status/acme/feed.atom`);
    expect(feed.headers.get('content-type')).toContain('application/atom+xml');
    const xml = await feed.text();
    expect(xml).toContain('<feed xmlns="http://www.w3.org/2005/Atom">');
    expect(xml).toContain('<title>API health is down (INC-');
  });

  it('shows 90 daily uptime bars for a top-level monitor component', async () => {
    await admin('POST', `/status-pages/${pageId}/components`, { kind: 'monitor', name: 'Public API', monitor_name: 'API health' });
    const html = await (await fetch(`${t.url}/status/acme`)).text();
    expect(html.match(/class="bar /g)?.length).toBe(90);
    const json: any = await (await fetch(`${t.url}/status/acme.json`)).json();
    const c = json.components.find((x: { name: string }) => x.name === 'Public API');
    expect(c.uptime_bars).toHaveLength(90);
    expect(c.uptime_bars.at(-1)).toMatchObject({ date: '2026-04-01', uptime: 0, health: 'down' });
    expect(c.uptime_bars[0]).toMatchObject({ uptime: null, health: 'unknown' });
  });

  it('answers 404 for a private page to strangers and serves it to a reader of the project', async () => {
    const priv = (await admin('POST', '/status-pages', { name: 'Internal', slug: 'internal' })).body;
    expect(priv.isPublic).toBe(false);
    expect((await fetch(`${t.url}/status/internal`)).status).toBe(404);
    expect((await fetch(`${t.url}/status/internal.json`)).status).toBe(404);
    expect((await fetch(`${t.url}/status/internal/feed.atom`)).status).toBe(404);
    expect((await fetch(`${t.url}/status/internal`, { headers: { 'x-service-key': t.otherProject.adminKey } })).status).toBe(404);
    expect((await fetch(`${t.url}/status/internal`, { headers: { 'x-service-key': t.keys.ingest } })).status).toBe(404);
    expect((await fetch(`${t.url}/status/internal`, { headers: { 'x-service-key': t.mintKey(['read']) } })).status).toBe(200);
    expect((await fetch(`${t.url}/status/no-such-page`)).status).toBe(404);
  });

  it('serves a page on its custom domain through the Host header', async () => {
    expect((await admin('PATCH', `/status-pages/${pageId}`, { customDomain: 'status.acme.test' })).body.customDomain).toBe('status.acme.test');
    const html = await getWithHost('/', 'status.acme.test');
    expect(html).toContain('<h1>Acme</h1>');
    const json = JSON.parse(await getWithHost('/index.json', 'status.acme.test'));
    expect(json.page.url).toBe('http://status.acme.test/');
    expect((await fetch(`${t.url}/`)).headers.get('content-type')).toContain('application/json'); // the server's own host is unchanged
    expect((await admin('POST', '/status-pages', { name: 'Dup', slug: 'dup', customDomain: 'status.acme.test' })).body.code).toBe('custom_domain_taken');
  });
});

/** fetch() may not set Host; node:http may. */
function getWithHost(path: string, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http.get(`${t.url}${path}`, { headers: { host } }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c) => (body += c)).on('end', () => resolve(body));
    }).on('error', reject);
  });
}

/** A tiny cookie jar for the form posts. */
function jar() {
  const cookies = new Map<string, string>();
  return {
    async fetch(url: string, init: RequestInit = {}) {
      const headers = new Headers(init.headers);
      if (cookies.size) headers.set('cookie', [...cookies].map(([k, v]) => `${k}=${v}`).join('; '));
      const res = await fetch(url, { ...init, headers, redirect: 'manual' });
      for (const c of res.headers.getSetCookie()) {
        const [kv] = c.split(';');
        const i = kv!.indexOf('=');
        cookies.set(kv!.slice(0, i), kv!.slice(i + 1));
      }
      return res;
    },
  };
}
const form = (o: Record<string, string>) => ({ method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams(o).toString() });
const hidden = (html: string, name: string) => new RegExp(`name="${name}" value="([^"]+)"`).exec(html)![1]!;

describe('subscribers', () => {
  it('subscribes with double opt-in and mails confirmed subscribers about incidents through the outbox', async () => {
    const outbox = t.s.config.mail.outboxFile;
    const browser = jar();
    const page = await (await browser.fetch(`${t.url}/status/acme`)).text();
    // A post without the form's CSRF token is refused and stores nothing.
    expect((await fetch(`${t.url}/status/acme/subscribe`, form({ email: 'ana@example.com' }))).status).toBe(400);
    const sub = await browser.fetch(`${t.url}/status/acme/subscribe`, form({ email: 'Ana@Example.com', csrf_token: hidden(page, 'csrf_token') }));
    expect(sub.status).toBe(200);
    expect(await sub.text()).toContain('Check your email');
    expect(readOutbox(outbox)).toEqual([]); // queued as a job, sent when the scheduler runs
    await t.s.services.scheduler.runDue();
    const [confirmMail] = readOutbox(outbox);
    expect(confirmMail).toMatchObject({ to: 'ana@example.com', subject: 'Confirm your subscription to Acme status' });
    const link = /Confirm: (\S+)/.exec(confirmMail!.text)![1]!;

    // Not subscribed yet: a new incident mails nobody.
    result(dbMonitor, 'down');
    await t.s.services.scheduler.runDue();
    expect(readOutbox(outbox)).toHaveLength(1);

    // The link shows a button (mail scanners only GET); the POST confirms.
    const confirmPage = await (await browser.fetch(link.replace(t.s.config.baseUrl, t.url))).text();
    expect(confirmPage).toContain('Confirm subscription');
    const done = await browser.fetch(`${t.url}/status/acme/confirm`, form({ id: hidden(confirmPage, 'id'), token: hidden(confirmPage, 'token'), csrf_token: hidden(confirmPage, 'csrf_token') }));
    expect(await done.text()).toContain('will get incident updates');
    expect((await admin('GET', `/status-pages/${pageId}`)).body.counts).toMatchObject({ subscribers: 1, confirmed_subscribers: 1 });

    // The database monitor recovers: its incident resolves and the subscriber hears about it.
    clock += 120_000;
    result(dbMonitor, 'up');
    await t.s.services.scheduler.runDue();
    const mails = readOutbox(outbox).slice(1);
    expect(mails).toHaveLength(1);
    expect(mails[0]).toMatchObject({ to: 'ana@example.com', subject: expect.stringMatching(/^\[Acme\] Resolved: Database is down \(INC-\d+\)$/) });
    expect(mails[0]!.text).toContain('Database recovered');

    // A person posts an update on the API incident: mailed too, with an unsubscribe link that works.
    const open = (await admin('GET', `/incidents?status=open&monitor_id=${apiMonitor}`)).body.data[0];
    await admin('PATCH', `/incidents/${open.display_id}`, { status: 'identified', message: 'A bad deploy; rolling back.' });
    await t.s.services.scheduler.runDue();
    const update = readOutbox(outbox).at(-1)!;
    expect(update.subject).toBe(`[Acme] Identified: API health is down (${open.display_id})`);
    expect(update.text).toContain('A bad deploy; rolling back.');
    const unsub = /Unsubscribe: (\S+)/.exec(update.text)![1]!.replace(t.s.config.baseUrl, t.url);
    const unsubPage = await (await browser.fetch(unsub)).text();
    await browser.fetch(`${t.url}/status/acme/unsubscribe`, form({ id: hidden(unsubPage, 'id'), token: hidden(unsubPage, 'token'), csrf_token: hidden(unsubPage, 'csrf_token') }));
    expect((await admin('GET', `/status-pages/${pageId}`)).body.counts.subscribers).toBe(0);
    const before = readOutbox(outbox).length;
    await admin('PATCH', `/incidents/${open.display_id}`, { status: 'resolved', message: 'Fixed.' });
    await t.s.services.scheduler.runDue();
    expect(readOutbox(outbox)).toHaveLength(before);
  });

  it('refuses a confirmation link with a wrong token and subscription on a private page', async () => {
    expect((await fetch(`${t.url}/status/acme/confirm?id=x&token=y`)).status).toBe(404);
    expect((await fetch(`${t.url}/status/internal/subscribe`, form({ email: 'a@b.example' }))).status).toBe(404);
  });

  it('deletes a page with its components and subscribers but keeps monitors and incidents', async () => {
    expect((await admin('DELETE', `/status-pages/${pageId}`)).body).toEqual({ id: pageId, deleted: true });
    expect((await fetch(`${t.url}/status/acme`)).status).toBe(404);
    expect((await admin('GET', `/monitors/${apiMonitor}`)).status).toBe(200);
    expect((await admin('GET', '/incidents')).body.total).toBeGreaterThan(0);
  });
});
