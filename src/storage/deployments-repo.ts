import { randomUUID } from 'node:crypto';
import type { Statement } from 'better-sqlite3';
import type { Db } from './db.js';

export interface DeploymentRow {
  id: string;
  project_id: string;
  provider: string;
  deployment_id: string;
  service: string | null;
  version: string | null;
  environment: string | null;
  status: string;
  url: string | null;
  commit_sha: string | null;
  branch: string | null;
  started_at: number | null;
  finished_at: number | null;
  created_at: number;
  updated_at: number;
}

export type DeploymentUpsert = Omit<DeploymentRow, 'id' | 'project_id' | 'created_at' | 'updated_at'>;

/** A re-sent deployment: fields left undefined keep their stored value (a CI job sending only the new status). */
export type DeploymentPatch = Pick<DeploymentUpsert, 'provider' | 'deployment_id'> & Partial<Omit<DeploymentUpsert, 'provider' | 'deployment_id'>>;

/** Values of a new record for the fields a first send left out. */
const NEW_DEFAULTS: Omit<DeploymentUpsert, 'provider' | 'deployment_id'> = {
  service: null, version: null, environment: null, status: 'unknown', url: null, commit_sha: null, branch: null, started_at: null, finished_at: null,
};

export interface DeploymentFilter {
  provider?: string;
  environment?: string;
  service?: string;
  version?: string;
  status?: string;
  fromMs?: number;
  toMs?: number;
  limit: number;
  offset: number;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
const fromRow = (r: any): DeploymentRow => ({ ...r, project_id: String(r.project_id) });

/** The time a deployment is placed at: when it started, else when we first heard of it. */
const AT = 'COALESCE(started_at, created_at)';

/**
 * Deployment writes made through this process, per database: readers that keep derived data
 * (the releases repo's record cache) compare it, so a write in the same millisecond as the last one
 * is never missed.
 */
const writes = new WeakMap<Db, { n: number }>();
export function deploymentWrites(db: Db): number {
  return writes.get(db)?.n ?? 0;
}

export function createDeploymentsRepo(db: Db) {
  let counter = writes.get(db);
  if (!counter) writes.set(db, (counter = { n: 0 }));
  const written = counter;
  const s = {
    byKey: db.prepare('SELECT * FROM deployments WHERE project_id = ? AND provider = ? AND deployment_id = ?'),
    insert: db.prepare(`INSERT INTO deployments (id, project_id, provider, deployment_id, service, version, environment, status, url, commit_sha, branch, started_at, finished_at, created_at, updated_at)
      VALUES (@id, @project_id, @provider, @deployment_id, @service, @version, @environment, @status, @url, @commit_sha, @branch, @started_at, @finished_at, @now, @now)`),
    update: db.prepare(`UPDATE deployments SET service = @service, version = @version, environment = @environment, status = @status, url = @url,
      commit_sha = @commit_sha, branch = @branch, started_at = @started_at, finished_at = @finished_at, updated_at = @now WHERE id = @id`),
  };

  // One statement per filter combination, prepared once (compiling SQL per request is a hot-path cost).
  const statements = new Map<string, Statement>();
  const cached = (sql: string): Statement => {
    let st = statements.get(sql);
    if (!st) statements.set(sql, (st = db.prepare(sql)));
    return st;
  };

  function list(projectId: string, f: DeploymentFilter): { rows: DeploymentRow[]; total: number } {
    const where = ['project_id = ?'];
    const args: unknown[] = [Number(projectId)];
    for (const col of ['provider', 'environment', 'service', 'version', 'status'] as const) {
      if (f[col] !== undefined) {
        where.push(`${col} = ?`);
        args.push(f[col]);
      }
    }
    if (f.fromMs !== undefined) {
      where.push(`${AT} >= ?`);
      args.push(f.fromMs);
    }
    if (f.toMs !== undefined) {
      where.push(`${AT} <= ?`);
      args.push(f.toMs);
    }
    const w = where.join(' AND ');
    const total = (cached(`SELECT COUNT(*) AS n FROM deployments WHERE ${w}`).get(...args) as { n: number }).n;
    const rows = cached(`SELECT * FROM deployments WHERE ${w} ORDER BY ${AT} DESC, id DESC LIMIT ? OFFSET ?`)
      .all(...args, f.limit, f.offset)
      .map(fromRow);
    return { rows, total };
  }

  return {
    /**
     * Create or update by provider + deployment_id. On update, only the fields sent (not undefined)
     * change; `check` sees the merged record before it is written (and may throw). Returns the row and
     * whether it was created.
     */
    upsert(projectId: string, d: DeploymentPatch, now: number, check?: (merged: DeploymentUpsert) => void): { row: DeploymentRow; created: boolean } {
      const sent = Object.fromEntries(Object.entries(d).filter(([, v]) => v !== undefined)) as DeploymentPatch;
      return db.transaction(() => {
        const existing = s.byKey.get(Number(projectId), d.provider, d.deployment_id) as any;
        if (existing) {
          const merged: DeploymentUpsert = { ...fromRow(existing), ...sent };
          check?.(merged);
          s.update.run({ ...merged, id: existing.id, now });
          written.n++;
          return { row: fromRow(s.byKey.get(Number(projectId), d.provider, d.deployment_id)), created: false };
        }
        const fresh: DeploymentUpsert = { ...NEW_DEFAULTS, ...sent };
        check?.(fresh);
        s.insert.run({ ...fresh, id: randomUUID(), project_id: Number(projectId), now });
        written.n++;
        return { row: fromRow(s.byKey.get(Number(projectId), d.provider, d.deployment_id)), created: true };
      })();
    },
    list,
    /** Deployments of a service/environment that started at or before `beforeMs`, newest first. */
    before(projectId: string, service: string | null, environment: string | null, beforeMs: number, limit: number): DeploymentRow[] {
      const where = ['project_id = ?', `${AT} <= ?`];
      const args: unknown[] = [Number(projectId), beforeMs];
      if (service) {
        where.push('service = ?');
        args.push(service);
      }
      if (environment) {
        where.push('environment = ?');
        args.push(environment);
      }
      return db
        .prepare(`SELECT * FROM deployments WHERE ${where.join(' AND ')} ORDER BY ${AT} DESC LIMIT ?`)
        .all(...args, limit)
        .map(fromRow);
    },
  };
}

export type DeploymentsRepo = ReturnType<typeof createDeploymentsRepo>;
