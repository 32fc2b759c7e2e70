import type { Db } from './db.js';

/**
 * The integer key of an observation id in the id lookup tables (migration 041): 52 bits, a safe
 * JavaScript integer. A span-derived id (16 hex digits, random) gives its first 13 digits; any other
 * id (the own batch endpoint, Langfuse legacy ingestion: arbitrary text) a 52-bit FNV-1a hash. Keys
 * can collide, so every lookup compares the stored observation id too.
 */
export function obsIdKey(id: string): number {
  if (id.length >= 13 && HEX13.test(id)) return parseInt(id.slice(0, 13), 16);
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ id.length;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x5bd1e995);
    b ^= b >>> 15;
  }
  return (a & 0xfffff) * 0x1_0000_0000 + (b >>> 0);
}
const HEX13 = /^[0-9a-f]{13}/;

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
