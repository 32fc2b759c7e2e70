/**
 * Who an error event happened to: the Sentry `user` (id, email, username, ip_address, kept as the SDK
 * sent them) or, for OTLP exception events, the `enduser.id` / `user.id` span attributes. Pure.
 *
 * A distinct user is counted by the first identity present, as Sentry does: id, then email, then
 * username, then IP address (`{{auto}}`, a placeholder asking a server to infer the IP, is no
 * identity). `USER_KEY_SQL` computes the same key from a stored `user_json` column, for backfills and
 * window counts: keep the two in step.
 */

/* eslint-disable @typescript-eslint/no-explicit-any */
const isObj = (v: unknown): v is Record<string, any> => !!v && typeof v === 'object' && !Array.isArray(v);

/** A scalar identity field as text ('' when absent, empty or not a string/number). */
export function userField(user: unknown, field: 'id' | 'email' | 'username' | 'ip_address'): string {
  if (!isObj(user)) return '';
  const v = user[field];
  if (typeof v === 'string') return v;
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  return '';
}

/** Longest stored distinct-user key. */
const KEY_MAX = 256;

/** The distinct-user key of an event's user, or null when it names nobody. */
export function userKeyOf(user: unknown): string | null {
  const id = userField(user, 'id');
  if (id) return `id:${id}`.slice(0, KEY_MAX);
  const email = userField(user, 'email');
  if (email) return `email:${email}`.slice(0, KEY_MAX);
  const username = userField(user, 'username');
  if (username) return `username:${username}`.slice(0, KEY_MAX);
  const ip = userField(user, 'ip_address');
  if (ip && ip !== '{{auto}}') return `ip:${ip}`.slice(0, KEY_MAX);
  return null;
}

const sqlField = (col: string, field: string) => `NULLIF(CAST(json_extract(${col}, '$.${field}') AS TEXT), '')`;

/** SQL for userKeyOf over a JSON text column (NULL when it names nobody). */
export function userKeySql(col: string): string {
  return `substr(COALESCE('id:' || ${sqlField(col, 'id')}, 'email:' || ${sqlField(col, 'email')}, 'username:' || ${sqlField(col, 'username')},
    'ip:' || NULLIF(${sqlField(col, 'ip_address')}, '{{auto}}')), 1, ${KEY_MAX})`;
}

/** SQL for userField over a JSON text column ('' when absent). */
export function userFieldSql(col: string, field: 'id' | 'email' | 'username' | 'ip_address'): string {
  return `COALESCE(CAST(json_extract(${col}, '$.${field}') AS TEXT), '')`;
}

/**
 * The user of an OTLP exception event, from OTel attributes (span first, then resource):
 * `enduser.id` or `user.id`, `user.email`, `user.name` (as username). Null when none is set.
 */
export function userFromOtelAttributes(...sources: Record<string, unknown>[]): Record<string, string> | null {
  const pick = (...keys: string[]): string => {
    for (const s of sources) {
      for (const k of keys) {
        const v = s[k];
        if (typeof v === 'string' && v) return v;
        if (typeof v === 'number' && Number.isFinite(v)) return String(v);
      }
    }
    return '';
  };
  const out: Record<string, string> = {};
  const id = pick('enduser.id', 'user.id');
  const email = pick('user.email');
  const username = pick('user.name', 'enduser.name');
  if (id) out.id = id;
  if (email) out.email = email;
  if (username) out.username = username;
  return Object.keys(out).length ? out : null;
}
