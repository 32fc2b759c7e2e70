import { hashPassword, hashSecret, newSecret, randomPassword } from '../domain/identity/secrets.js';
import type { Services } from './services.js';

export interface BootstrapResult {
  organization_id: string;
  project_id: string;
  ingest_key: string;
  admin_key: string;
  owner_email: string;
  /** null when the owner already existed (their password is not known to us). */
  owner_password: string | null;
}

/**
 * Creates an organization, its owner, a project, an ingest key (`events:ingest` only: it sends
 * telemetry, it cannot read it) and an admin key (`*`). Secrets are returned here once and stored
 * hashed.
 */
export function bootstrapOrganization(
  services: Services,
  opts: { org?: string; project?: string; email?: string; now: number },
): BootstrapResult {
  const { identity } = services;
  const email = opts.email ?? 'owner@sightline.local';
  let password: string | null = null;
  let user = identity.userByEmail(email);
  if (!user) {
    password = randomPassword();
    user = identity.createUser(email, email.split('@')[0]!, hashPassword(password), opts.now);
  }
  const org = identity.createOrganization(opts.org ?? 'Default organization', opts.now);
  identity.addMembership(org.id, user.id, 'owner', opts.now);
  const project = identity.createProject(org.id, opts.project ?? 'default', opts.now);
  const mint = (label: string, scopes: string[]) => {
    const secret = newSecret('sl');
    identity.createApiKey(project.id, { label, prefix: secret.slice(0, 10), secretHash: hashSecret(secret), scopes, expiresAt: null }, opts.now);
    return secret;
  };
  return {
    organization_id: org.id,
    project_id: project.id,
    ingest_key: mint('ingest (created at setup)', ['events:ingest']),
    admin_key: mint('admin (created at setup)', ['*']),
    owner_email: email,
    owner_password: password,
  };
}
