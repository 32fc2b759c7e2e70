import { randomUUID } from 'node:crypto';
import type { Db } from './db.js';

export interface StatusPageRow {
  id: string;
  project_id: string;
  org_id: string;
  name: string;
  slug: string;
  is_public: boolean;
  custom_domain: string | null;
  theme_config: Record<string, unknown>;
  created_at: number;
  updated_at: number;
}

export type ComponentKind = 'monitor' | 'static' | 'group';

export interface ComponentRow {
  id: string;
  page_id: string;
  kind: ComponentKind;
  name: string;
  description: string | null;
  parent_id: string | null;
  monitor_id: string | null;
  status: string | null;
  external_url: string | null;
  position: number;
  created_at: number;
  updated_at: number;
}

export interface SubscriberRow {
  id: string;
  page_id: string;
  email: string;
  confirmed_at: number | null;
  created_at: number;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
const pageFrom = (r: any): StatusPageRow => ({ ...r, project_id: String(r.project_id), is_public: !!r.is_public, theme_config: JSON.parse(r.theme_config) });

/** Status pages, their components and their email subscribers. */
export function createStatusPagesRepo(db: Db) {
  const s = {
    insert: db.prepare(`INSERT INTO status_pages (id, project_id, org_id, name, slug, is_public, custom_domain, theme_config, created_at, updated_at)
      VALUES (@id, @project_id, @org_id, @name, @slug, @is_public, @custom_domain, @theme_config, @now, @now)`),
    get: db.prepare('SELECT * FROM status_pages WHERE project_id = ? AND id = ?'),
    bySlug: db.prepare('SELECT * FROM status_pages WHERE slug = ?'),
    byDomain: db.prepare('SELECT * FROM status_pages WHERE custom_domain = ?'),
    list: db.prepare('SELECT * FROM status_pages WHERE project_id = ? ORDER BY created_at, id LIMIT ? OFFSET ?'),
    count: db.prepare('SELECT COUNT(*) AS n FROM status_pages WHERE project_id = ?'),
    update: db.prepare(`UPDATE status_pages SET name = @name, slug = @slug, is_public = @is_public, custom_domain = @custom_domain,
      theme_config = @theme_config, updated_at = @updated_at WHERE project_id = @project_id AND id = @id`),
    remove: db.prepare('DELETE FROM status_pages WHERE project_id = ? AND id = ?'),
    pagesOfProject: db.prepare('SELECT * FROM status_pages WHERE project_id = ?'),

    cInsert: db.prepare(`INSERT INTO status_components (id, page_id, kind, name, description, parent_id, monitor_id, status, external_url, position, created_at, updated_at)
      VALUES (@id, @page_id, @kind, @name, @description, @parent_id, @monitor_id, @status, @external_url,
      (SELECT COALESCE(MAX(position), -1) + 1 FROM status_components WHERE page_id = @page_id), @now, @now)`),
    cGet: db.prepare('SELECT * FROM status_components WHERE page_id = ? AND id = ?'),
    cList: db.prepare('SELECT * FROM status_components WHERE page_id = ? ORDER BY position, created_at'),
    cUpdate: db.prepare(`UPDATE status_components SET name = @name, description = @description, parent_id = @parent_id, monitor_id = @monitor_id,
      status = @status, external_url = @external_url, position = @position, updated_at = @updated_at WHERE page_id = @page_id AND id = @id`),
    cRemove: db.prepare('DELETE FROM status_components WHERE page_id = ? AND id = ?'),
    cUnlinkMonitor: db.prepare('UPDATE status_components SET monitor_id = NULL, updated_at = ? WHERE monitor_id = ?'),
    cPagesOfMonitor: db.prepare('SELECT DISTINCT page_id FROM status_components WHERE monitor_id = ?'),
    cCounts: db.prepare(`SELECT COUNT(*) AS components, SUM(kind = 'monitor') AS monitor_components, SUM(kind = 'group') AS groups FROM status_components WHERE page_id = ?`),

    sInsert: db.prepare(`INSERT INTO status_subscribers (id, page_id, email, token_hash, confirmed_at, created_at) VALUES (?, ?, ?, ?, NULL, ?)
      ON CONFLICT (page_id, email) DO UPDATE SET token_hash = CASE WHEN confirmed_at IS NULL THEN excluded.token_hash ELSE token_hash END`),
    sByEmail: db.prepare('SELECT id, page_id, email, confirmed_at, created_at FROM status_subscribers WHERE page_id = ? AND email = ?'),
    sByToken: db.prepare('SELECT id, page_id, email, confirmed_at, created_at FROM status_subscribers WHERE page_id = ? AND token_hash = ?'),
    sConfirm: db.prepare('UPDATE status_subscribers SET confirmed_at = ? WHERE id = ? AND confirmed_at IS NULL'),
    sRemove: db.prepare('DELETE FROM status_subscribers WHERE id = ?'),
    sConfirmed: db.prepare('SELECT id, page_id, email, confirmed_at, created_at FROM status_subscribers WHERE page_id = ? AND confirmed_at IS NOT NULL'),
    sCounts: db.prepare('SELECT COUNT(*) AS total, COUNT(confirmed_at) AS confirmed FROM status_subscribers WHERE page_id = ?'),
    sSetToken: db.prepare('UPDATE status_subscribers SET token_hash = ? WHERE id = ?'),
  };

  const repo = {
    create(projectId: string, orgId: string, p: { name: string; slug: string; is_public: boolean; custom_domain: string | null; theme_config: Record<string, unknown> }, now: number): StatusPageRow {
      const id = randomUUID();
      s.insert.run({ id, project_id: Number(projectId), org_id: orgId, ...p, is_public: p.is_public ? 1 : 0, theme_config: JSON.stringify(p.theme_config), now });
      return repo.get(projectId, id)!;
    },
    get(projectId: string, id: string): StatusPageRow | undefined {
      const r = s.get.get(Number(projectId), id);
      return r ? pageFrom(r) : undefined;
    },
    bySlug(slug: string): StatusPageRow | undefined {
      const r = s.bySlug.get(slug);
      return r ? pageFrom(r) : undefined;
    },
    byDomain(domain: string): StatusPageRow | undefined {
      const r = s.byDomain.get(domain);
      return r ? pageFrom(r) : undefined;
    },
    list(projectId: string, limit: number, offset: number): { rows: StatusPageRow[]; total: number } {
      return { rows: (s.list.all(Number(projectId), limit, offset) as any[]).map(pageFrom), total: (s.count.get(Number(projectId)) as { n: number }).n };
    },
    ofProject(projectId: string): StatusPageRow[] {
      return (s.pagesOfProject.all(Number(projectId)) as any[]).map(pageFrom);
    },
    save(p: StatusPageRow, now: number): void {
      s.update.run({ ...p, project_id: Number(p.project_id), is_public: p.is_public ? 1 : 0, theme_config: JSON.stringify(p.theme_config), updated_at: now });
    },
    /** Deletes the page; its components and subscribers go with it (foreign keys cascade). */
    remove(projectId: string, id: string): boolean {
      return s.remove.run(Number(projectId), id).changes === 1;
    },
    counts(pageId: string): { components: number; monitor_components: number; groups: number; subscribers: number; confirmed_subscribers: number } {
      const c = s.cCounts.get(pageId) as any;
      const sub = s.sCounts.get(pageId) as any;
      return { components: c.components, monitor_components: c.monitor_components ?? 0, groups: c.groups ?? 0, subscribers: sub.total, confirmed_subscribers: sub.confirmed };
    },

    createComponent(pageId: string, c: Omit<ComponentRow, 'id' | 'page_id' | 'position' | 'created_at' | 'updated_at'>, now: number): ComponentRow {
      const id = randomUUID();
      s.cInsert.run({ id, page_id: pageId, ...c, now });
      return repo.component(pageId, id)!;
    },
    component(pageId: string, id: string): ComponentRow | undefined {
      return s.cGet.get(pageId, id) as ComponentRow | undefined;
    },
    components(pageId: string): ComponentRow[] {
      return s.cList.all(pageId) as ComponentRow[];
    },
    saveComponent(c: ComponentRow, now: number): void {
      s.cUpdate.run({ ...c, updated_at: now });
    },
    /** Deletes a component (a group's children go with it); linked monitors are untouched. */
    removeComponent(pageId: string, id: string): boolean {
      return s.cRemove.run(pageId, id).changes === 1;
    },
    unlinkMonitorEverywhere(monitorId: string, now: number): void {
      s.cUnlinkMonitor.run(now, monitorId);
    },
    pageIdsShowingMonitor(monitorId: string): string[] {
      return (s.cPagesOfMonitor.all(monitorId) as { page_id: string }[]).map((r) => r.page_id);
    },

    /** Adds a pending subscriber, or renews a pending one's token; a confirmed one is left as is. */
    subscribe(pageId: string, email: string, tokenHash: string, now: number): SubscriberRow {
      s.sInsert.run(randomUUID(), pageId, email, tokenHash, now);
      return s.sByEmail.get(pageId, email) as SubscriberRow;
    },
    subscriberByToken(pageId: string, tokenHash: string): SubscriberRow | undefined {
      return s.sByToken.get(pageId, tokenHash) as SubscriberRow | undefined;
    },
    confirmSubscriber(id: string, now: number): boolean {
      return s.sConfirm.run(now, id).changes === 1;
    },
    setSubscriberToken(id: string, tokenHash: string): void {
      s.sSetToken.run(tokenHash, id);
    },
    removeSubscriber(id: string): void {
      s.sRemove.run(id);
    },
    confirmedSubscribers(pageId: string): SubscriberRow[] {
      return s.sConfirmed.all(pageId) as SubscriberRow[];
    },
  };
  return repo;
}

export type StatusPagesRepo = ReturnType<typeof createStatusPagesRepo>;
