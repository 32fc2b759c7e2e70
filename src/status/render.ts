/** HTML, JSON and Atom renderings of a status page view (src/core/status-view.ts). No scripts. */
import { esc, htmlDocument } from '../pages/layout.js';
import type { ComponentView, PageView } from '../core/status-view.js';
import type { Health, UptimeBar } from '../domain/monitors/health.js';
import { displayId } from '../core/monitoring.js';

const LABEL: Record<Health, string> = { operational: 'Operational', degraded: 'Degraded performance', down: 'Outage', unknown: 'No data' };
const OVERALL: Record<Health, string> = {
  operational: 'All systems operational',
  degraded: 'Some systems are degraded',
  down: 'Some systems are down',
  unknown: 'Status not available yet',
};

const style = (accent: string) => `
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;background:#f4f5f7;color:#1d2230}
main{max-width:860px;margin:32px auto;padding:0 16px}
header h1{font-size:24px;margin:0 0 16px}
section{background:#fff;border:1px solid #dfe1e6;border-radius:10px;padding:18px 22px;margin:0 0 18px}
h2{font-size:17px;margin:0 0 12px}
.banner{font-size:18px;font-weight:600;color:#fff;border-radius:10px;padding:16px 22px;margin:0 0 18px}
.banner.operational{background:${accent}}.banner.degraded{background:#d48806}.banner.down{background:#cf1322}.banner.unknown{background:#5e6c84}
.component{border-top:1px solid #eef0f3;padding:10px 0}.component:first-child{border-top:0}
.row{display:flex;justify-content:space-between;gap:12px;align-items:baseline}
.name{font-weight:600}.desc{color:#5e6c84;font-size:13px}
.health{font-size:13px;font-weight:600}.health.operational{color:#237804}.health.degraded{color:#ad6800}.health.down{color:#a8071a}.health.unknown{color:#5e6c84}
.children{margin:6px 0 0 18px}
.bars{display:flex;gap:2px;height:28px;margin:8px 0 2px}
.bar{flex:1;border-radius:2px;background:#dfe1e6}.bar.operational{background:#52c41a}.bar.degraded{background:#faad14}.bar.down{background:#f5222d}
.legend{display:flex;justify-content:space-between;color:#5e6c84;font-size:12px}
.incident{border-top:1px solid #eef0f3;padding:10px 0}.incident:first-child{border-top:0}
.incident h3{font-size:15px;margin:0}.update{margin:6px 0 0}.update time{color:#5e6c84;font-size:12px}
.muted{color:#5e6c84;font-size:13px}
form.subscribe{display:flex;gap:8px;flex-wrap:wrap}
input[type=email]{flex:1;min-width:220px;padding:8px 10px;border:1px solid #b3b9c4;border-radius:6px;font:inherit}
button{font:inherit;padding:8px 16px;border-radius:6px;border:1px solid ${accent};background:${accent};color:#fff;cursor:pointer}
footer{color:#5e6c84;font-size:13px;text-align:center;margin:24px 0}
a{color:${accent}}
`;

export function accentOf(page: { theme_config: Record<string, unknown> }): string {
  const a = page.theme_config.accentColor;
  return typeof a === 'string' && /^#[0-9a-f]{3,8}$/i.test(a) ? a : '#237804';
}

function bars(list: UptimeBar[], uptime: number | null): string {
  const cells = list
    .map((b) => `<span class="bar ${b.health}" title="${esc(b.date)}: ${b.uptime === null ? 'no data' : `${(b.uptime * 100).toFixed(2)}% up`}"></span>`)
    .join('');
  return `<div class="bars" aria-label="Uptime over the last 90 days">${cells}</div>
<div class="legend"><span>90 days ago</span><span>${uptime === null ? 'no data' : `${(uptime * 100).toFixed(2)}% uptime`}</span><span>Today</span></div>`;
}

function componentHtml(c: ComponentView, extra: string): string {
  const link = c.external_url ? ` <a href="${esc(c.external_url)}" rel="noopener noreferrer">status</a>` : '';
  return `<div class="component" data-component="${esc(c.name)}">
<div class="row"><span><span class="name">${esc(c.name)}</span>${link}${c.description ? `<br><span class="desc">${esc(c.description)}</span>` : ''}</span>
<span class="health ${c.health}">${LABEL[c.health]}</span></div>${extra}</div>`;
}

const time = (ms: number) => `<time datetime="${new Date(ms).toISOString()}">${esc(new Date(ms).toISOString().replace('T', ' ').slice(0, 16))} UTC</time>`;

export interface RenderLinks {
  base: string; // e.g. /status/acme or '' on a custom domain
  json: string;
  feed: string;
  subscribe: string;
}

export function renderPage(v: PageView, links: RenderLinks, o: { csrf: string | null; notice?: string; now: number }): string {
  const accent = accentOf(v.page);
  const comps = v.tree
    .map((t) => {
      const kids = t.children.length ? `<div class="children">${t.children.map((c) => componentHtml(c, '')).join('')}</div>` : '';
      return componentHtml(t.component, (t.bars ? bars(t.bars, t.uptime) : '') + kids);
    })
    .join('\n');
  const open = v.incidents.filter((i) => !i.incident.resolved_at);
  const recent = v.incidents.filter((i) => i.incident.resolved_at);
  const incidentHtml = (list: typeof v.incidents) =>
    list
      .map(
        ({ incident: i, updates }) => `<article class="incident" id="${esc(displayId(i))}">
<h3>${esc(i.title)} <span class="muted">${esc(displayId(i))} · ${esc(i.status)}</span></h3>
${[...updates].reverse().map((u) => `<p class="update"><strong>${esc(u.status)}</strong> — ${esc(u.message)}<br>${time(u.at_ms)}</p>`).join('\n')}
</article>`,
      )
      .join('\n');
  const body = `<main>
<header><h1>${esc(v.page.name)}</h1></header>
<div class="banner ${v.overall}" role="status">${OVERALL[v.overall]}</div>
${open.length ? `<section aria-labelledby="open-h"><h2 id="open-h">Ongoing incidents</h2>${incidentHtml(open)}</section>` : ''}
<section aria-labelledby="comp-h"><h2 id="comp-h">Components</h2>
${comps || '<p class="muted">No components yet.</p>'}
</section>
<section aria-labelledby="past-h"><h2 id="past-h">Recent incidents</h2>
${recent.length ? incidentHtml(recent) : '<p class="muted">No incidents in the last 14 days.</p>'}
</section>
${
  o.csrf
    ? `<section aria-labelledby="sub-h"><h2 id="sub-h">Get incident updates by email</h2>
${o.notice ? `<p role="alert">${esc(o.notice)}</p>` : ''}
<form class="subscribe" method="post" action="${esc(links.subscribe)}">
<input type="hidden" name="csrf_token" value="${esc(o.csrf)}">
<label class="muted" for="email" hidden>Email</label>
<input id="email" name="email" type="email" required maxlength="254" placeholder="you@example.com" autocomplete="email">
<button type="submit">Subscribe</button>
</form></section>`
    : ''
}
<footer><a href="${esc(links.feed)}">Atom feed</a> · <a href="${esc(links.json)}">JSON</a> · Updated ${time(o.now)}</footer>
</main>`;
  return htmlDocument({
    title: `${v.page.name} status`,
    style: style(accent),
    body,
    head: `<link rel="alternate" type="application/atom+xml" title="${esc(v.page.name)} incidents" href="${esc(links.feed)}">`,
  });
}

export function renderMessage(title: string, html: string, accent = '#237804'): string {
  return htmlDocument({ title, style: style(accent), body: `<main><section><h2>${esc(title)}</h2>${html}</section></main>` });
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export function pageJson(v: PageView, url: string) {
  return {
    page: { name: v.page.name, slug: v.page.slug, url, updated_at: iso(v.page.updated_at) },
    status: v.overall,
    components: v.tree.map((t) => ({
      name: t.component.name,
      kind: t.component.kind,
      health: t.component.health,
      description: t.component.description,
      external_url: t.component.external_url,
      uptime_90d: t.uptime,
      uptime_bars: t.bars?.map((b) => ({ date: b.date, uptime: b.uptime, health: b.health })) ?? null,
      children: t.children.map((c) => ({ name: c.name, kind: c.kind, health: c.health, description: c.description, external_url: c.external_url })),
    })),
    incidents: v.incidents.map(({ incident: i, updates }) => ({
      id: i.id,
      display_id: displayId(i),
      title: i.title,
      status: i.status,
      impact: i.impact,
      started_at: iso(i.started_at),
      resolved_at: iso(i.resolved_at),
      updates: updates.map((u) => ({ at: iso(u.at_ms), status: u.status, message: u.message })),
    })),
  };
}

const xml = (s: string) => s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c]!);

export function renderAtom(v: PageView, pageUrl: string, feedUrl: string, now: number): string {
  const updated = Math.max(v.page.updated_at, ...v.incidents.map((i) => i.incident.updated_at));
  const entries = v.incidents
    .map(({ incident: i, updates }) => {
      const text = [...updates].reverse().map((u) => `${new Date(u.at_ms).toISOString()} ${u.status}: ${u.message}`).join('\n');
      return `<entry>
<id>urn:uuid:${i.id}</id>
<title>${xml(`${i.resolved_at ? '[Resolved] ' : ''}${i.title} (${displayId(i)})`)}</title>
<link rel="alternate" type="text/html" href="${xml(`${pageUrl}#${displayId(i)}`)}"/>
<published>${new Date(i.started_at).toISOString()}</published>
<updated>${new Date(i.updated_at).toISOString()}</updated>
<content type="text">${xml(text)}</content>
</entry>`;
    })
    .join('\n');
  return `<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom">
<id>${xml(feedUrl)}</id>
<title>${xml(`${v.page.name} incidents`)}</title>
<updated>${new Date(Number.isFinite(updated) ? updated : now).toISOString()}</updated>
<link rel="self" type="application/atom+xml" href="${xml(feedUrl)}"/>
<link rel="alternate" type="text/html" href="${xml(pageUrl)}"/>
<author><name>${xml(v.page.name)}</name></author>
${entries}
</feed>`;
}
