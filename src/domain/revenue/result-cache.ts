/**
 * Revenue results are kept up to 5 minutes (spec, Revenue); any revenue write or project change
 * bumps the project's version, so the next read computes a fresh result. With several processes
 * (issue 20) the version is also shared (`SharedVersions`, in PostgreSQL): a write through one
 * process starts a fresh result in every other.
 */
export const RESULT_TTL_MS = 5 * 60_000;

/** A per-project version every process sees (bumped with a write; read before each computation). */
export interface SharedVersions {
  bump(projectId: string): void;
  version(projectId: string): number;
}

export class ResultCache {
  private versions = new Map<string, number>();
  private entries = new Map<string, { at: number; version: string; value: unknown }>();
  constructor(
    private maxEntries = 500,
    private shared?: SharedVersions,
  ) {}

  bump(projectId: string): void {
    this.versions.set(projectId, (this.versions.get(projectId) ?? 0) + 1);
    this.shared?.bump(projectId);
  }

  version(projectId: string): string {
    const local = this.versions.get(projectId) ?? 0;
    return this.shared ? `${local}:${this.shared.version(projectId)}` : String(local);
  }

  get<T>(projectId: string, key: string, now: number, compute: () => T): { value: T; cached: boolean } {
    const k = `${projectId}\u0000${key}`;
    // Read before computing: a write committed meanwhile moves it, and the entry is not used again.
    const v = this.version(projectId);
    const hit = this.entries.get(k);
    if (hit && hit.version === v && now - hit.at < RESULT_TTL_MS && now >= hit.at) return { value: hit.value as T, cached: true };
    const value = compute();
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
    this.entries.set(k, { at: now, version: v, value });
    return { value, cached: false };
  }
}
