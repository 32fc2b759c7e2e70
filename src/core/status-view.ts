/**
 * What a status page shows, computed once for the API and the public page: components with their
 * health (monitor components from their monitor, static ones as set, groups as their worst child),
 * the page's overall health, 90-day uptime bars per monitor component and the incidents it shows
 * (open ones, and ones resolved in the last 14 days).
 */
import type { Services } from './services.js';
import { DAY_MS, healthOfMonitor, uptimeBars, uptimeRatio, worstHealth, type Health, type UptimeBar } from '../domain/monitors/health.js';
import type { ComponentRow, StatusPageRow } from '../storage/status-pages-repo.js';
import type { IncidentRow, IncidentUpdateRow } from '../storage/incidents-repo.js';
import type { MonitorRow } from '../storage/monitors-repo.js';

export interface ComponentView extends ComponentRow {
  health: Health;
  monitor_name: string | null;
  monitor_state: string | null;
}

export interface PageView {
  page: StatusPageRow;
  overall: Health;
  /** Top-level components in order; groups carry their children. */
  tree: { component: ComponentView; children: ComponentView[]; bars: UptimeBar[] | null; uptime: number | null }[];
  components: ComponentView[];
  incidents: { incident: IncidentRow; updates: IncidentUpdateRow[] }[];
}

export const RECENT_INCIDENT_DAYS = 14;

export function componentViews(services: Services, page: StatusPageRow): ComponentView[] {
  const rows = services.statusPages.components(page.id);
  const monitors = new Map<string, MonitorRow | undefined>();
  const monitorOf = (id: string) => {
    if (!monitors.has(id)) monitors.set(id, services.monitors.get(page.project_id, id));
    return monitors.get(id);
  };
  const own = (c: ComponentRow): ComponentView => {
    if (c.kind === 'monitor') {
      const m = c.monitor_id ? monitorOf(c.monitor_id) : undefined;
      return { ...c, health: healthOfMonitor(m ? (m.paused ? 'paused' : m.state) : null), monitor_name: m?.name ?? null, monitor_state: m ? (m.paused ? 'paused' : m.state) : null };
    }
    if (c.kind === 'static') return { ...c, health: (c.status as Health) ?? 'operational', monitor_name: null, monitor_state: null };
    return { ...c, health: 'unknown', monitor_name: null, monitor_state: null };
  };
  const views = rows.map(own);
  for (const g of views.filter((v) => v.kind === 'group')) {
    g.health = worstHealth(views.filter((v) => v.parent_id === g.id).map((v) => v.health));
  }
  return views;
}

export async function pageView(services: Services, page: StatusPageRow, now: number, opts: { bars?: boolean } = {}): Promise<PageView> {
  const components = componentViews(services, page);
  const top = components.filter((c) => !c.parent_id);
  const monitorIds = new Set(components.map((c) => c.monitor_id).filter((x): x is string => !!x));
  const today = Math.floor(now / DAY_MS);
  const withBars = top.filter((c) => c.kind === 'monitor' && c.monitor_id && opts.bars).map((c) => c.monitor_id!);
  const daysOf = withBars.length ? await services.monitors.daysOf(page.project_id, withBars, today - 89) : new Map();
  const barsOf = (c: ComponentView) => {
    const days = c.kind === 'monitor' && c.monitor_id && opts.bars ? daysOf.get(c.monitor_id) : undefined;
    return days ? { bars: uptimeBars(days, now, 90), uptime: uptimeRatio(days) } : { bars: null, uptime: null };
  };
  const tree = top.map((c) => ({ component: c, children: components.filter((x) => x.parent_id === c.id), ...barsOf(c) }));
  const { rows } = services.incidents.list(page.project_id, { resolvedSince: now - RECENT_INCIDENT_DAYS * DAY_MS, limit: 50, offset: 0 });
  const incidents = rows
    .filter((i) => !i.monitor_id || monitorIds.has(i.monitor_id))
    .map((incident) => ({ incident, updates: services.incidents.updates(incident.id) }));
  const overall = worstHealth(top.map((c) => c.health));
  return { page, overall, tree, components, incidents };
}
