/** Ledger rules (spec, Revenue): refunds and disputes are negative, dispute reversals positive; voided rows do not count. */
export const LEDGER_TYPES = ['payment', 'refund', 'dispute', 'dispute_reversal'] as const;
export type LedgerType = (typeof LEDGER_TYPES)[number];
export const LEDGER_STATUSES = ['posted', 'voided'] as const;
export type LedgerStatus = (typeof LEDGER_STATUSES)[number];

/** `amount` is a positive smallest-unit integer; the type sets the sign. */
export function signedAmount(type: LedgerType, amount: number): number {
  return type === 'refund' || type === 'dispute' ? -Math.abs(amount) : Math.abs(amount);
}

/** At most one day in the future (spec, Limits). */
export const MAX_FUTURE_MS = 24 * 3600_000;

export interface LedgerRow {
  id: string;
  type: LedgerType;
  /** Signed smallest-unit amount. */
  amount: number;
  currency: string;
  occurred_at: number;
  customer_id: string | null;
  distinct_id: string | null;
  anonymous_id: string | null;
  parent_id: string | null;
  subscription_id: string | null;
  plan: string | null;
  recurring: boolean;
  status: LedgerStatus;
  /** `api` (revenue.sendEvents), `stripe` (webhook or backfill). */
  source: string;
}

/** Who paid, for the customer count: the customer id, else the person ids. */
export function customerKey(r: Pick<LedgerRow, 'customer_id' | 'distinct_id' | 'anonymous_id'>): string | null {
  if (r.customer_id) return `c:${r.customer_id}`;
  if (r.distinct_id) return `d:${r.distinct_id}`;
  if (r.anonymous_id) return `a:${r.anonymous_id}`;
  return null;
}

/** An incoming item (API or provider) → a stored row: signed amount, upper-case currency, nulls for absent fields. */
export function toLedgerRow(
  w: {
    id: string;
    type: LedgerType;
    amount: number;
    currency: string;
    occurred_at: number;
    customer_id?: string;
    distinct_id?: string;
    anonymous_id?: string;
    parent_id?: string;
    subscription_id?: string;
    plan?: string;
    recurring?: boolean;
    status?: LedgerStatus;
  },
  source: string,
): LedgerRow {
  return {
    id: w.id,
    type: w.type,
    amount: signedAmount(w.type, w.amount),
    currency: w.currency.toUpperCase(),
    occurred_at: w.occurred_at,
    customer_id: w.customer_id ?? null,
    distinct_id: w.distinct_id ?? null,
    anonymous_id: w.anonymous_id ?? null,
    parent_id: w.parent_id ?? null,
    subscription_id: w.subscription_id ?? null,
    plan: w.plan ?? null,
    recurring: w.recurring ?? false,
    status: w.status ?? 'posted',
    source,
  };
}
