import { randomUUID } from 'node:crypto';
import type { Db } from './db.js';
import type { Role } from '../domain/identity/roles.js';

export interface OrganizationRow { id: string; name: string; created_at: number }
export interface UserRow { id: string; email: string; name: string; password_hash: string; created_at: number }
export interface MemberRow { id: string; name: string; email: string; role: Role; joined_at: number }
export interface ProjectRow {
  id: string;
  org_id: string;
  name: string;
  slug: string;
  product_analytics: boolean;
  remote_access_preview: boolean;
  spike_protection_enabled: boolean;
  spike_threshold_per_minute: number | null;
  created_at: number;
}
export interface ApiKeyRow {
  id: string;
  project_id: string;
  label: string;
  prefix: string;
  scopes: string[];
  expires_at: number | null;
  created_at: number;
  updated_at: number;
  last_used_at: number | null;
  revoked_at: number | null;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
function projectFromRow(r: any): ProjectRow {
  return {
    id: String(r.id),
    org_id: r.org_id,
    name: r.name,
    slug: r.slug,
    product_analytics: !!r.product_analytics,
    remote_access_preview: !!r.remote_access_preview,
    spike_protection_enabled: !!r.spike_protection_enabled,
    spike_threshold_per_minute: r.spike_threshold_per_minute ?? null,
    created_at: r.created_at,
  };
}

function keyFromRow(r: any): ApiKeyRow {
  return {
    id: r.id,
    project_id: String(r.project_id),
    label: r.label,
    prefix: r.prefix,
    scopes: JSON.parse(r.scopes),
    expires_at: r.expires_at ?? null,
    created_at: r.created_at,
    updated_at: r.updated_at,
    last_used_at: r.last_used_at ?? null,
    revoked_at: r.revoked_at ?? null,
  };
}

/**
 * Organizations, users, memberships, projects and API keys. Project-owned rows (keys) take the
 * project id first; lookups by secret hash are the one entry point before a project is known.
 */
export function createIdentityRepo(db: Db) {
  let credentialGeneration = 0;
  const s = {
    insertOrg: db.prepare('INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)'),
    insertUser: db.prepare('INSERT INTO users (id, email, name, password_hash, created_at) VALUES (?, ?, ?, ?, ?)'),
    userByEmail: db.prepare('SELECT * FROM users WHERE email = ?'),
    userById: db.prepare('SELECT * FROM users WHERE id = ?'),
    insertMembership: db.prepare('INSERT INTO memberships (org_id, user_id, role, created_at) VALUES (?, ?, ?, ?)'),
    membershipsOfUser: db.prepare('SELECT org_id, role FROM memberships WHERE user_id = ?'),
    membersOfOrg: db.prepare(`SELECT u.id, u.name, u.email, m.role, m.created_at AS joined_at FROM memberships m JOIN users u ON u.id = m.user_id
      WHERE m.org_id = ? ORDER BY CASE m.role WHEN 'owner' THEN 0 WHEN 'admin' THEN 1 ELSE 2 END, u.email COLLATE NOCASE, u.id`),
    orgsByIds: db.prepare('SELECT * FROM organizations WHERE id IN (SELECT value FROM json_each(?)) ORDER BY name, id'),
    insertProject: db.prepare('INSERT INTO projects (org_id, name, slug, created_at) VALUES (?, ?, ?, ?)'),
    projectById: db.prepare('SELECT * FROM projects WHERE id = ?'),
    projectsOfOrgs: db.prepare('SELECT * FROM projects WHERE org_id IN (SELECT value FROM json_each(?)) ORDER BY id'),
    countProjects: db.prepare('SELECT COUNT(*) AS n FROM projects'),
    updateSpike: db.prepare('UPDATE projects SET spike_protection_enabled = ?, spike_threshold_per_minute = ? WHERE id = ?'),
    updateFlags: db.prepare('UPDATE projects SET product_analytics = ?, remote_access_preview = ? WHERE id = ?'),
    insertKey: db.prepare(
      'INSERT INTO api_keys (id, project_id, label, prefix, secret_hash, scopes, expires_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    keyByHash: db.prepare('SELECT * FROM api_keys WHERE secret_hash = ? AND revoked_at IS NULL'),
    keyById: db.prepare('SELECT * FROM api_keys WHERE project_id = ? AND id = ? AND revoked_at IS NULL'),
    keysOfProject: db.prepare('SELECT * FROM api_keys WHERE project_id = ? AND revoked_at IS NULL ORDER BY created_at DESC, id'),
    updateKey: db.prepare('UPDATE api_keys SET label = ?, scopes = ?, updated_at = ? WHERE project_id = ? AND id = ?'),
    revokeKey: db.prepare('UPDATE api_keys SET revoked_at = ? WHERE project_id = ? AND id = ? AND revoked_at IS NULL'),
    touchKey: db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?'),
    dataVersion: db.prepare('PRAGMA data_version').pluck(),
  };

  return {
    createOrganization(name: string, now: number): OrganizationRow {
      const id = randomUUID();
      s.insertOrg.run(id, name, now);
      return { id, name, created_at: now };
    },
    createUser(email: string, name: string, passwordHash: string, now: number): UserRow {
      const id = randomUUID();
      s.insertUser.run(id, email, name, passwordHash, now);
      return { id, email, name, password_hash: passwordHash, created_at: now };
    },
    userByEmail(email: string): UserRow | undefined {
      return s.userByEmail.get(email) as UserRow | undefined;
    },
    userById(id: string): UserRow | undefined {
      return s.userById.get(id) as UserRow | undefined;
    },
    addMembership(orgId: string, userId: string, role: Role, now: number): void {
      s.insertMembership.run(orgId, userId, role, now);
    },
    rolesOfUser(userId: string): Record<string, Role> {
      const out: Record<string, Role> = {};
      for (const r of s.membershipsOfUser.all(userId) as { org_id: string; role: Role }[]) out[r.org_id] = r.role;
      return out;
    },
    /** Members of an organization (its projects' members), owners first, then admins, then by email. */
    membersOfOrg(orgId: string): MemberRow[] {
      return s.membersOfOrg.all(orgId) as MemberRow[];
    },
    organizations(orgIds: string[]): OrganizationRow[] {
      return s.orgsByIds.all(JSON.stringify(orgIds)) as OrganizationRow[];
    },
    createProject(orgId: string, name: string, now: number): ProjectRow {
      const slug = name.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-|-$/g, '') || 'project';
      const info = s.insertProject.run(orgId, name, slug, now);
      return projectFromRow(s.projectById.get(info.lastInsertRowid));
    },
    projectById(projectId: string): ProjectRow | undefined {
      if (!/^\d{1,15}$/.test(projectId)) return undefined;
      const r = s.projectById.get(Number(projectId));
      return r ? projectFromRow(r) : undefined;
    },
    projectsOfOrgs(orgIds: string[]): ProjectRow[] {
      return s.projectsOfOrgs.all(JSON.stringify(orgIds)).map(projectFromRow);
    },
    isEmpty(): boolean {
      return (s.countProjects.get() as { n: number }).n === 0;
    },
    setSpikeProtection(projectId: string, enabled: boolean, threshold: number | null): void {
      s.updateSpike.run(enabled ? 1 : 0, threshold, Number(projectId));
      credentialGeneration++;
    },
    setProjectFlags(projectId: string, flags: { product_analytics: boolean; remote_access_preview: boolean }): void {
      s.updateFlags.run(flags.product_analytics ? 1 : 0, flags.remote_access_preview ? 1 : 0, Number(projectId));
      credentialGeneration++;
    },
    createApiKey(
      projectId: string,
      k: { label: string; prefix: string; secretHash: string; scopes: string[]; expiresAt: number | null },
      now: number,
    ): ApiKeyRow {
      const id = randomUUID();
      s.insertKey.run(id, Number(projectId), k.label, k.prefix, k.secretHash, JSON.stringify(k.scopes), k.expiresAt, now, now);
      return keyFromRow(s.keyById.get(Number(projectId), id));
    },
    apiKeyBySecretHash(hash: string): ApiKeyRow | undefined {
      const r = s.keyByHash.get(hash);
      return r ? keyFromRow(r) : undefined;
    },
    apiKey(projectId: string, keyId: string): ApiKeyRow | undefined {
      const r = s.keyById.get(Number(projectId), keyId);
      return r ? keyFromRow(r) : undefined;
    },
    apiKeys(projectId: string): ApiKeyRow[] {
      return s.keysOfProject.all(Number(projectId)).map(keyFromRow);
    },
    updateApiKey(projectId: string, keyId: string, label: string, scopes: string[], now: number): void {
      s.updateKey.run(label, JSON.stringify(scopes), now, Number(projectId), keyId);
      credentialGeneration++;
    },
    revokeApiKey(projectId: string, keyId: string, now: number): boolean {
      credentialGeneration++;
      return s.revokeKey.run(now, Number(projectId), keyId).changes > 0;
    },
    /**
     * Bumped by every change to a key's scopes or validity and to a project's settings made through
     * this repo: the short key cache of apiKeyIdentity() (REST and ingest authentication) drops what
     * it holds when this moves, so a revoke or update takes effect on the next request.
     */
    credentialGeneration(): number {
      return credentialGeneration;
    },
    /**
     * SQLite's `PRAGMA data_version` of this connection: it moves whenever another connection (another
     * Sightline process sharing the file) commits, never for this connection's own commits. The key
     * cache checks it on every hit, so a key revoked or a project changed by another process is seen
     * on the next request too.
     */
    dataVersion(): number {
      return s.dataVersion.get() as number;
    },
    touchApiKey(keyId: string, now: number): void {
      s.touchKey.run(now, keyId);
    },
  };
}

export type IdentityRepo = ReturnType<typeof createIdentityRepo>;
