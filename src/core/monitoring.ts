/**
 * Monitors at run time: the scheduler jobs that run HTTP checks and detect missed or timed-out cron
 * check-ins, the processing of Sentry check-ins (ingestion awaits onCheckIn once committed), state transitions
 * (up / down / degraded / paused), incidents opened on down and resolved on recovery, domain events
 * for the agent and automations, and incident mail to status-page subscribers (as `mail.send` jobs
 * committed with the change that caused them).
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Scheduler, JobRow } from './scheduler.js';
import type { DomainEvent, EventBus } from './events.js';
import { enqueueMail } from './mail.js';
import { runHttpCheck } from './uptime-check.js';
import { createAddressPolicy, type AddressPolicy } from '../domain/monitors/address-policy.js';
import { nextRun, type Schedule } from '../domain/monitors/cron.js';
import { DAY_MS, displayId, type MonitorState } from '../domain/monitors/health.js';
import type { CronMonitorConfig, HttpMonitorConfig, MonitorRow, MonitorsRepo } from '../storage/monitors-repo.js';
import type { IncidentRow, IncidentsRepo, IncidentStatus } from '../storage/incidents-repo.js';
import type { StatusPageRow, StatusPagesRepo } from '../storage/status-pages-repo.js';

export const JOB_HTTP_CHECK = 'monitor.check';
export const JOB_CRON_MISSED = 'monitor.cron-missed';
export const JOB_CRON_TIMEOUT = 'monitor.cron-timeout';
export const JOB_PRUNE = 'monitor.prune';

export interface MonitoringDeps {
  monitors: MonitorsRepo;
  incidents: IncidentsRepo;
  statusPages: StatusPagesRepo;
  scheduler: Scheduler;
  events: EventBus;
  /** Runs a function in one database transaction. */
  atomic: <T>(fn: () => T) => T;
  now: () => number;
  baseUrl: string;
  allowPrivate: string;
  retentionDays: number;
  /** Server secret for subscriber links. */
  secret: () => Buffer;
}

export type ResultKind = 'up' | 'degraded' | 'down' | 'ok' | 'error' | 'missed' | 'timeout' | 'in_progress';

export interface ResultInput {
  status: ResultKind;
  at: number;
  latency_ms?: number | null;
  http_status?: number | null;
  error?: string | null;
  region?: string | null;
  check_in_id?: string | null;
}

export { displayId };

const MIN = 60_000;

export function createMonitoring(d: MonitoringDeps) {
  const policy: AddressPolicy = createAddressPolicy(d.allowPrivate);
  const mac = (purpose: string, v: string) => createHmac('sha256', d.secret()).update(`${purpose}\n${v}`).digest('base64url');

  const stateOf = (r: ResultKind): MonitorState | null =>
    r === 'in_progress' ? null : r === 'up' || r === 'ok' ? 'up' : r === 'degraded' ? 'degraded' : 'down';

  /** Pages whose subscribers hear about an incident: pages showing its monitor, or every page of the project. */
  const pagesForIncident = (inc: IncidentRow): StatusPageRow[] => {
    const pages = d.statusPages.ofProject(inc.project_id);
    if (!inc.monitor_id) return pages;
    const ids = new Set(d.statusPages.pageIdsShowingMonitor(inc.monitor_id));
    return pages.filter((p) => ids.has(p.id));
  };

  const pageUrl = (p: StatusPageRow) => (p.custom_domain ? `https://${p.custom_domain}/` : `${d.baseUrl}/status/${encodeURIComponent(p.slug)}`);

  /** The check-ins of this process, one after another (see onCheckIn). */
  let checkIns: Promise<unknown> = Promise.resolve();

  async function checkIn(projectId: string, c: Record<string, unknown>, at: number, slug: string, checkInId: string, status: 'in_progress' | 'ok' | 'error'): Promise<void> {
    const known = d.monitors.bySlug(projectId, slug);
    const priorOfKnown = known ? await d.monitors.lastStatusOfCheckIn(projectId, known.id, checkInId) : undefined;
    const { value: events, write } = d.monitors.collectResults(() =>
      d.atomic(() => {
        let mon = d.monitors.bySlug(projectId, slug);
        const cfg = cronConfigFromSentry(c.monitor_config);
        if (!mon) {
          if (!cfg) return []; // Sentry too needs a monitor config (or an existing monitor) to accept a check-in
          const name = d.monitors.byName(projectId, slug) ? `${slug} (cron)` : slug;
          mon = d.monitors.create(projectId, { name, kind: 'cron', config: cfg, slug, paused: false, next_expected_at: null }, d.now());
        } else if (cfg && mon.kind === 'cron' && JSON.stringify(cfg) !== JSON.stringify(mon.config)) {
          mon = { ...mon, config: cfg };
          d.monitors.save(mon, d.now());
        }
        if (mon.kind !== 'cron' || mon.paused) return [];
        const config = mon.config as CronMonitorConfig;
        const prior = mon.id === known?.id ? priorOfKnown : undefined; // a monitor made just now has no results
        if (prior && prior !== 'in_progress') return []; // a repeat of a finished check-in
        const timeoutKey = `${mon.id}:${checkInId}`;
        if (!prior) {
          // A new run: the expected slot is satisfied; the next one is the schedule's next time.
          mon = { ...mon, next_expected_at: m.nextExpected(config, at, mon.created_at) };
          d.monitors.save(mon, d.now());
          m.scheduleMonitor(mon);
        }
        if (status === 'in_progress') {
          d.scheduler.enqueue(JOB_CRON_TIMEOUT, timeoutKey, { project_id: projectId }, at + config.max_runtime_min * MIN);
        } else {
          d.scheduler.cancel(JOB_CRON_TIMEOUT, timeoutKey);
        }
        const duration = typeof c.duration === 'number' ? Math.round(c.duration * 1000) : null;
        return m.applyResult(mon, {
          status, at, latency_ms: duration, check_in_id: checkInId,
          error: status === 'error' ? 'the job reported an error' : null, region: typeof c.environment === 'string' ? c.environment : null,
        });
      }),
    );
    await write();
    m.publish(events);
  }

  const m = {
    policy,
    pageUrl,
    unsubscribeToken: (subscriberId: string) => mac('unsubscribe', subscriberId),
    checkUnsubscribeToken(subscriberId: string, token: string): boolean {
      const a = Buffer.from(mac('unsubscribe', subscriberId));
      const b = Buffer.from(token);
      return a.length === b.length && timingSafeEqual(a, b);
    },

    /** Queues incident mail for confirmed subscribers of the pages showing it (inside the caller's transaction). */
    notifySubscribers(inc: IncidentRow, message: string): void {
      const now = d.now();
      for (const page of pagesForIncident(inc)) {
        if (!page.is_public) continue;
        for (const sub of d.statusPages.confirmedSubscribers(page.id)) {
          const unsubscribe = `${d.baseUrl}/status/${encodeURIComponent(page.slug)}/unsubscribe?id=${sub.id}&token=${m.unsubscribeToken(sub.id)}`;
          const state = inc.status === 'resolved' ? 'Resolved' : inc.status[0]!.toUpperCase() + inc.status.slice(1);
          enqueueMail(d.scheduler, `incident:${inc.id}:${inc.updated_at}:${sub.id}`, {
            to: sub.email,
            subject: `[${page.name}] ${state}: ${inc.title} (${displayId(inc)})`,
            text: `${inc.title}\nStatus: ${state}\n\n${message}\n\nStatus page: ${pageUrl(page)}\nUnsubscribe: ${unsubscribe}\n`,
            headers: { 'List-Unsubscribe': `<${unsubscribe}>` },
          }, now);
        }
      }
    },

    /**
     * Records a result and applies the state change it implies (call inside a transaction, itself
     * inside `monitors.collectResults`, whose write stores the result once committed). Returns the
     * events to publish once the result is stored.
     */
    applyResult(mon: MonitorRow, r: ResultInput): DomainEvent[] {
      const region = r.region ?? (mon.kind === 'http' ? (mon.config as HttpMonitorConfig).region : null);
      void d.monitors.addResult(mon.project_id, mon.id, {
        at_ms: r.at, status: r.status as never, latency_ms: r.latency_ms ?? null, http_status: r.http_status ?? null,
        error: r.error ?? null, region, check_in_id: r.check_in_id ?? null,
      });
      const events: DomainEvent[] = [];
      const next = stateOf(r.status);
      const row: MonitorRow = { ...mon };
      if (r.status !== 'in_progress') {
        row.last_result_at = r.at;
        row.last_result_status = r.status;
      }
      if (next && !mon.paused && next !== mon.state) {
        const base = { projectId: mon.project_id, at: r.at, monitorId: mon.id, monitorName: mon.name };
        const reason = r.error ?? (r.status === 'error' ? 'the job reported an error' : r.status);
        if (next === 'down') {
          let inc = mon.open_incident_id ? d.incidents.get(mon.project_id, mon.open_incident_id) : undefined;
          if (!inc || inc.status === 'resolved') {
            const message = `${mon.name} is down: ${reason}.`;
            inc = d.incidents.create(mon.project_id, { title: `${mon.name} is down`, status: 'investigating', impact: 'major', monitor_id: mon.id, started_at: r.at, message, author: 'monitor' }, d.now());
            m.notifySubscribers(inc, message);
            events.push({ type: 'incident.opened', projectId: mon.project_id, at: r.at, incidentId: inc.id, displayId: displayId(inc), title: inc.title });
          }
          row.open_incident_id = inc.id;
          events.push({ type: 'monitor.down', ...base, reason, incidentId: inc.id });
        } else {
          if (next === 'degraded') events.push({ type: 'monitor.degraded', ...base, reason });
          if (mon.state === 'down') {
            const incidentId = mon.open_incident_id;
            const inc = incidentId ? d.incidents.get(mon.project_id, incidentId) : undefined;
            if (inc && inc.status !== 'resolved') {
              const message = `${mon.name} recovered; resolved automatically.`;
              const done = d.incidents.update({ ...inc, status: 'resolved', resolved_at: r.at }, { message, author: 'monitor' }, d.now());
              m.notifySubscribers(done, message);
              events.push({ type: 'incident.resolved', projectId: mon.project_id, at: r.at, incidentId: inc.id, displayId: displayId(inc) });
            }
            row.open_incident_id = null;
            events.push({ type: 'monitor.recovered', ...base, downForMs: r.at - mon.state_changed_at, incidentId: incidentId ?? null });
          }
        }
        row.state = next;
        row.state_changed_at = r.at;
      }
      d.monitors.save(row, d.now());
      return events;
    },

    publish(events: DomainEvent[]): void {
      for (const e of events) d.events.publish(e);
    },

    /** (Re)schedules the jobs a monitor needs after it was created or changed (inside the caller's transaction). */
    scheduleMonitor(mon: MonitorRow): void {
      const now = d.now();
      if (mon.kind === 'http') {
        d.scheduler.cancel(JOB_CRON_MISSED, mon.id);
        if (mon.paused) d.scheduler.cancel(JOB_HTTP_CHECK, mon.id);
        else d.scheduler.enqueue(JOB_HTTP_CHECK, mon.id, {}, now);
      } else {
        d.scheduler.cancel(JOB_HTTP_CHECK, mon.id);
        const cfg = mon.config as CronMonitorConfig;
        if (mon.paused || mon.next_expected_at === null) d.scheduler.cancel(JOB_CRON_MISSED, mon.id);
        else d.scheduler.enqueue(JOB_CRON_MISSED, mon.id, {}, mon.next_expected_at + cfg.checkin_margin_min * MIN);
      }
    },

    /**
     * Forgets a monitor's jobs, component links and incident links (the monitor row is removed by the
     * caller); an incident it left open is resolved, since nothing would ever resolve it.
     */
    forgetMonitor(mon: MonitorRow): void {
      const open = mon.open_incident_id ? d.incidents.get(mon.project_id, mon.open_incident_id) : undefined;
      if (open && open.status !== 'resolved') {
        const message = `The monitor ${mon.name} was deleted; resolved automatically.`;
        const done = d.incidents.update({ ...open, status: 'resolved', resolved_at: d.now() }, { message, author: 'monitor' }, d.now());
        m.notifySubscribers(done, message);
      }
      d.scheduler.cancel(JOB_HTTP_CHECK, mon.id);
      d.scheduler.cancel(JOB_CRON_MISSED, mon.id);
      d.scheduler.cancelByKeyPrefix(JOB_CRON_TIMEOUT, `${mon.id}:`);
      d.statusPages.unlinkMonitorEverywhere(mon.id, d.now());
      d.incidents.forgetMonitor(mon.project_id, mon.id);
    },

    /** A person resolved or reopened an incident: keep the monitor's open-incident link true. */
    incidentChanged(inc: IncidentRow, previous: IncidentStatus): void {
      if (!inc.monitor_id || inc.status !== 'resolved' || previous === 'resolved') return;
      const mon = d.monitors.get(inc.project_id, inc.monitor_id);
      if (mon && mon.open_incident_id === inc.id) d.monitors.save({ ...mon, open_incident_id: null }, d.now());
    },

    /** The first expected check-in of a cron schedule after `after`. */
    nextExpected(cfg: CronMonitorConfig, after: number, anchor: number): number {
      const sched: Schedule = cfg.schedule.type === 'crontab' ? { ...cfg.schedule, timezone: cfg.timezone } : cfg.schedule;
      return nextRun(sched, after, anchor);
    },

    /**
     * A Sentry check-in, as ingestion stored it; resolves once its result is stored (ingestion
     * acknowledges the envelope after that). Check-ins are taken one at a time in a process: whether
     * one repeats a finished run is read from the results (possibly ClickHouse) before the transaction.
     */
    onCheckIn(projectId: string, c: Record<string, unknown>, at: number): Promise<void> {
      const slug = typeof c.monitor_slug === 'string' ? c.monitor_slug.slice(0, 128) : '';
      const checkInId = typeof c.check_in_id === 'string' ? c.check_in_id : '';
      const status = c.status;
      if (!slug || !checkInId || (status !== 'in_progress' && status !== 'ok' && status !== 'error')) return Promise.resolve();
      const run = checkIns.then(() => checkIn(projectId, c, at, slug, checkInId, status));
      checkIns = run.catch(() => {});
      return run;
    },

    register(): void {
      // A job's result is stored (collectResults' write) after the job's transaction committed and
      // before the job is done: the scheduler awaits the after-commit callback.
      d.scheduler.register(JOB_HTTP_CHECK, async (job: JobRow) => {
        const mon = d.monitors.getById(job.key);
        if (!mon || mon.kind !== 'http' || mon.paused) return {};
        const cfg = mon.config as HttpMonitorConfig;
        const result = await runHttpCheck(cfg, policy);
        const at = d.now();
        return {
          commit: () => {
            const fresh = d.monitors.getById(job.key);
            if (!fresh || fresh.paused || fresh.kind !== 'http') return;
            const { value: events, write } = d.monitors.collectResults(() => m.applyResult(fresh, { ...result, at }));
            return async () => {
              await write();
              m.publish(events);
            };
          },
          nextRunAt: () => {
            const fresh = d.monitors.getById(job.key);
            if (!fresh || fresh.paused || fresh.kind !== 'http') return null;
            const interval = (fresh.config as HttpMonitorConfig).interval_s * 1000;
            const next = job.run_at + interval;
            return next > at ? next : at + interval;
          },
        };
      });

      d.scheduler.register(JOB_CRON_MISSED, (job: JobRow) => {
        return {
          commit: () => {
            const mon = d.monitors.getById(job.key);
            if (!mon || mon.kind !== 'cron' || mon.paused || mon.next_expected_at === null) return;
            const cfg = mon.config as CronMonitorConfig;
            const deadline = mon.next_expected_at + cfg.checkin_margin_min * MIN;
            const now = d.now();
            if (deadline > now) return; // a check-in moved the slot after this run was claimed
            const expected = mon.next_expected_at;
            const { value: events, write } = d.monitors.collectResults(() =>
              m.applyResult(mon, { status: 'missed', at: deadline, error: `no check-in by ${new Date(deadline).toISOString()} (expected ${new Date(expected).toISOString()})` }),
            );
            const after = d.monitors.getById(mon.id)!;
            d.monitors.save({ ...after, next_expected_at: m.nextExpected(cfg, now - cfg.checkin_margin_min * MIN, mon.created_at) }, now);
            return async () => {
              await write();
              m.publish(events);
            };
          },
          nextRunAt: () => {
            const mon = d.monitors.getById(job.key);
            if (!mon || mon.kind !== 'cron' || mon.paused || mon.next_expected_at === null) return null;
            return mon.next_expected_at + (mon.config as CronMonitorConfig).checkin_margin_min * MIN;
          },
        };
      });

      d.scheduler.register(JOB_CRON_TIMEOUT, async (job: JobRow) => {
        const [monitorId, checkInId] = [job.key.slice(0, job.key.indexOf(':')), job.key.slice(job.key.indexOf(':') + 1)];
        const known = d.monitors.getById(monitorId);
        if (!known || known.paused) return {};
        // The run's last result, read before the transaction (results may be in ClickHouse), after the
        // check-ins this process is taking.
        await checkIns;
        if ((await d.monitors.lastStatusOfCheckIn(known.project_id, known.id, checkInId)) !== 'in_progress') return {};
        return {
          commit: () => {
            const mon = d.monitors.getById(monitorId);
            if (!mon || mon.paused) return; // (a check-in that finished the run cancelled this job: not called)
            const maxRuntime = (mon.config as CronMonitorConfig).max_runtime_min;
            const { value: events, write } = d.monitors.collectResults(() =>
              m.applyResult(mon, { status: 'timeout', at: d.now(), check_in_id: checkInId, error: `the run did not finish within ${maxRuntime} min` }),
            );
            return async () => {
              await write();
              m.publish(events);
            };
          },
        };
      });

      d.scheduler.register(JOB_PRUNE, async () => {
        const now = d.now();
        await d.monitors.prune(now - d.retentionDays * DAY_MS, Math.floor(now / DAY_MS) - 400);
        return { nextRunAt: () => d.now() + DAY_MS };
      });
      d.scheduler.ensure(JOB_PRUNE, 'all', {}, d.now() + 60 * MIN);
    },
  };
  return m;
}

export type Monitoring = ReturnType<typeof createMonitoring>;

/** Sentry's monitor_config ({ schedule, checkin_margin, max_runtime, timezone }) as our cron config, or null. */
export function cronConfigFromSentry(v: unknown): CronMonitorConfig | null {
  if (!v || typeof v !== 'object') return null;
  const c = v as Record<string, unknown>;
  const s = c.schedule as Record<string, unknown> | undefined;
  let schedule: Schedule | null = null;
  const timezone = typeof c.timezone === 'string' && c.timezone ? c.timezone : 'UTC';
  if (s?.type === 'crontab' && typeof s.value === 'string') schedule = { type: 'crontab', value: s.value, timezone };
  else if (s?.type === 'interval' && typeof s.value === 'number' && ['minute', 'hour', 'day', 'week', 'month', 'year'].includes(String(s.unit))) {
    schedule = { type: 'interval', value: s.value, unit: s.unit as 'minute' };
  }
  if (!schedule) return null;
  try {
    nextRun(schedule, 0);
  } catch {
    return null;
  }
  const num = (x: unknown, dflt: number, max: number) => (typeof x === 'number' && x >= 1 ? Math.min(Math.round(x), max) : dflt);
  return { schedule, checkin_margin_min: num(c.checkin_margin, 1, 1440), max_runtime_min: num(c.max_runtime, 30, 1440), timezone };
}
