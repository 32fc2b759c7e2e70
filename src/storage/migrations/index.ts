import { m001Identity } from './001-identity.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

/** Applied in order at start-up; `PRAGMA user_version` records the last one applied. Never edit a shipped migration: add one. */
export const MIGRATIONS: Migration[] = [m001Identity];
