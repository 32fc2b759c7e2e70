import { createHash } from 'node:crypto';

/** Feedback capture quota (spec, Limits): per project, shared by all keys. */
export const FEEDBACK_QUOTA = [
  { windowMs: 60_000, max: 20, name: 'minute' },
  { windowMs: 86_400_000, max: 1000, name: 'day' },
] as const;

/**
 * Seconds until the project may create one more record, or 0 when it may now.
 * `createdAtOfNewest(sinceMs, k)` gives created_at of the k-th newest record after sinceMs (k from 0).
 * With n ≥ max records in a window, capacity returns when the max-th newest leaves the window.
 */
export function quotaRetryAfterSeconds(
  now: number,
  createdAtOfNewest: (sinceMs: number, k: number) => number | null,
): number {
  let waitMs = 0;
  for (const q of FEEDBACK_QUOTA) {
    const t = createdAtOfNewest(now - q.windowMs, q.max - 1);
    if (t !== null) waitMs = Math.max(waitMs, t + q.windowMs - now);
  }
  return waitMs > 0 ? Math.ceil(waitMs / 1000) : 0;
}

/** Idempotency-Key: 1 to 128 printable ASCII characters. */
export const IDEMPOTENCY_KEY = /^[\x20-\x7e]{1,128}$/;

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (v && typeof v === 'object') {
    return Object.fromEntries(
      Object.keys(v as object)
        .sort()
        .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
    );
  }
  return v;
}

/** A stable hash of a payload, independent of key order. */
export function payloadHash(payload: unknown): string {
  return createHash('sha256').update(JSON.stringify(canonical(payload))).digest('hex');
}
