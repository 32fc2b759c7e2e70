import type { Db } from './db.js';

/**
 * The integer key of an observation id in the id lookup levels (migration 041): a 52-bit hash of
 * the whole id (two 32-bit FNV-1a/murmur-style lanes), a safe JavaScript integer. The whole id, not
 * a prefix of a span id: ids with a common prefix (counters, test tools) must not share a key.
 * Keys can collide, so every lookup compares the stored observation id too.
 */
export function obsIdKey(id: string): number {
  let a = 0x811c9dc5;
  let b = 0x9747b28c ^ id.length;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 13;
  }
  a ^= a >>> 15;
  a = Math.imul(a, 0x2c1b3c6d);
  b = Math.imul(b ^ (b >>> 16), 0x297a2d39);
  b ^= b >>> 15;
  return (a & 0xfffff) * 0x1_0000_0000 + (b >>> 0);
}

const registered = new WeakSet<Db>();
/** `sl_obs_key(observation_id)` in SQL on this connection (obsIdKey). */
export function registerObsIdKey(db: Db): void {
  if (registered.has(db)) return;
  db.function('sl_obs_key', { deterministic: true }, (id: unknown) => obsIdKey(String(id)));
  registered.add(db);
}

/** Row ids (agent_observations.id) of the observations with this id, through both levels. Params: project, key, project, key. */
export const OBS_ROWIDS_SQL =
  'SELECT obs FROM agent_obs_ids_new WHERE project_id = ? AND k = ? UNION ALL SELECT obs FROM agent_obs_ids WHERE project_id = ? AND k = ?';
