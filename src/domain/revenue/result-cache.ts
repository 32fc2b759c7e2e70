/**
 * Revenue results are kept up to 5 minutes (spec, Revenue); any revenue write or project change
 * bumps the project's version, so the next read computes a fresh result.
 */
export const RESULT_TTL_MS = 5 * 60_000;

export class ResultCache {
  private versions = new Map<string, number>();
  private entries = new Map<string, { at: number; version: number; value: unknown }>();
  constructor(private maxEntries = 500) {}

  bump(projectId: string): void {
    this.versions.set(projectId, (this.versions.get(projectId) ?? 0) + 1);
  }

  version(projectId: string): number {
    return this.versions.get(projectId) ?? 0;
  }

  get<T>(projectId: string, key: string, now: number, compute: () => T): { value: T; cached: boolean } {
    const k = `${projectId}\u0000${key}`;
    const v = this.version(projectId);
    const hit = this.entries.get(k);
    if (hit && hit.version === v && now - hit.at < RESULT_TTL_MS && now >= hit.at) return { value: hit.value as T, cached: true };
    const value = compute();
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(k, { at: now, version: v, value });
    return { value, cached: false };
  }
}
