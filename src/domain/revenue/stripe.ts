/**
 * Stripe-compatible payment events: signature verification and mapping to ledger rows and
 * subscription states. Pure functions; the webhook route and the backfill call them.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { LedgerType } from './ledger.js';

/** Stripe's default tolerance for a signed timestamp: 5 minutes. */
export const SIGNATURE_TOLERANCE_S = 300;

export type SignatureCheck = { ok: true; timestamp: number } | { ok: false; reason: 'missing_header' | 'bad_signature' | 'stale_timestamp' };

/**
 * `Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">[,v1=...]`, keyed by
 * the endpoint secret. Any v1 may match (Stripe sends several while a secret is rolled).
 */
export function verifyStripeSignature(header: string | undefined, rawBody: Buffer, secret: string, nowMs: number, toleranceS = SIGNATURE_TOLERANCE_S): SignatureCheck {
  if (!header) return { ok: false, reason: 'missing_header' };
  let t: number | null = null;
  const v1: string[] = [];
  for (const part of header.split(',')) {
    const i = part.indexOf('=');
    if (i < 0) continue;
    const k = part.slice(0, i).trim();
    const v = part.slice(i + 1).trim();
    if (k === 't' && /^\d+$/.test(v)) t = Number(v);
    else if (k === 'v1') v1.push(v);
  }
  if (t === null || !v1.length) return { ok: false, reason: 'missing_header' };
  const expected = createHmac('sha256', secret).update(`${t}.`).update(rawBody).digest();
  const match = v1.some((sig) => {
    if (!/^[0-9a-f]{64}$/i.test(sig)) return false;
    return timingSafeEqual(Buffer.from(sig, 'hex'), expected);
  });
  if (!match) return { ok: false, reason: 'bad_signature' };
  if (Math.abs(nowMs / 1000 - t) > toleranceS) return { ok: false, reason: 'stale_timestamp' };
  return { ok: true, timestamp: t };
}

export interface LedgerWrite {
  id: string;
  type: LedgerType;
  /** Positive smallest-unit amount; the type sets the sign. */
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
  status?: 'posted' | 'voided';
}

export interface SubscriptionWrite {
  id: string;
  status: string;
  mrr: number;
  currency: string;
  effective_at: number;
  customer_id?: string;
  plan?: string;
}

export type Mapped = { ledger: LedgerWrite[]; subscriptions: SubscriptionWrite[] };

/* eslint-disable @typescript-eslint/no-explicit-any */
const str = (v: unknown): string | undefined => (typeof v === 'string' && v ? v : undefined);
const idOf = (v: unknown): string | undefined => (typeof v === 'string' ? v : v && typeof v === 'object' ? str((v as any).id) : undefined);
const secs = (v: unknown, dflt: number) => (typeof v === 'number' && Number.isFinite(v) ? v * 1000 : dflt);

/** Person links come from metadata a checkout puts on the charge (`distinct_id`, `anonymous_id`, `plan`). */
function personMeta(o: any): Pick<LedgerWrite, 'distinct_id' | 'anonymous_id' | 'plan'> {
  const m = o?.metadata && typeof o.metadata === 'object' ? o.metadata : {};
  return {
    ...(str(m.distinct_id) || str(m.posthog_distinct_id) ? { distinct_id: str(m.distinct_id) ?? str(m.posthog_distinct_id) } : {}),
    ...(str(m.anonymous_id) ? { anonymous_id: str(m.anonymous_id) } : {}),
    ...(str(m.plan) ? { plan: str(m.plan) } : {}),
  };
}

export function chargeToLedger(c: any, at = Date.now()): LedgerWrite | null {
  if (!str(c?.id) || typeof c.amount !== 'number' || !str(c.currency)) return null;
  if (c.status && c.status !== 'succeeded') return null;
  if (c.paid === false || c.captured === false) return null;
  return {
    id: c.id,
    type: 'payment',
    amount: c.amount,
    currency: c.currency.toUpperCase(),
    occurred_at: secs(c.created, at),
    ...(idOf(c.customer) ? { customer_id: idOf(c.customer) } : {}),
    ...personMeta(c),
    ...(idOf(c.invoice) ? { recurring: true } : {}),
    status: 'posted',
  };
}

export function refundToLedger(r: any, charge?: any, at = Date.now()): LedgerWrite | null {
  if (!str(r?.id) || typeof r.amount !== 'number' || !str(r.currency)) return null;
  const voided = r.status === 'failed' || r.status === 'canceled';
  return {
    id: r.id,
    type: 'refund',
    amount: r.amount,
    currency: r.currency.toUpperCase(),
    occurred_at: secs(r.created, at),
    ...(idOf(r.charge) ? { parent_id: idOf(r.charge) } : {}),
    ...(charge && idOf(charge.customer) ? { customer_id: idOf(charge.customer) } : {}),
    ...personMeta(charge ?? r),
    status: voided ? 'voided' : 'posted',
  };
}

export function disputeToLedger(d: any, at = Date.now()): LedgerWrite | null {
  if (!str(d?.id) || typeof d.amount !== 'number' || !str(d.currency)) return null;
  return {
    id: d.id,
    type: 'dispute',
    amount: d.amount,
    currency: d.currency.toUpperCase(),
    occurred_at: secs(d.created, at),
    ...(idOf(d.charge) ? { parent_id: idOf(d.charge) } : {}),
    ...personMeta(d),
  };
}

/** A won dispute (or reinstated funds) gives the money back: one reversal row per dispute. */
export function disputeReversalToLedger(d: any, at: number): LedgerWrite | null {
  if (!str(d?.id) || typeof d.amount !== 'number' || !str(d.currency)) return null;
  return {
    id: `${d.id}:reversal`,
    type: 'dispute_reversal',
    amount: d.amount,
    currency: d.currency.toUpperCase(),
    occurred_at: at,
    parent_id: d.id,
    ...personMeta(d),
  };
}

const PAYING = new Set(['active', 'past_due']);

/** Monthly amount of a subscription's items: unit amount × quantity, normalised by interval. */
export function subscriptionMrr(sub: any): number {
  if (!PAYING.has(sub?.status)) return 0;
  let total = 0;
  for (const item of sub?.items?.data ?? []) {
    const price = item?.price ?? item?.plan;
    const unit = typeof price?.unit_amount === 'number' ? price.unit_amount : typeof price?.amount === 'number' ? price.amount : 0;
    const qty = typeof item?.quantity === 'number' ? item.quantity : 1;
    const rec = price?.recurring ?? price;
    const interval = rec?.interval ?? 'month';
    const count = typeof rec?.interval_count === 'number' && rec.interval_count > 0 ? rec.interval_count : 1;
    const perMonth = interval === 'year' ? 1 / 12 : interval === 'week' ? 52 / 12 : interval === 'day' ? 365 / 12 : 1;
    total += (unit * qty * perMonth) / count;
  }
  return Math.round(total);
}

export function subscriptionToState(sub: any, at: number): SubscriptionWrite | null {
  if (!str(sub?.id)) return null;
  const item = sub?.items?.data?.[0];
  const price = item?.price ?? item?.plan;
  const currency = str(sub.currency) ?? str(price?.currency);
  if (!currency) return null;
  const plan = str(sub.metadata?.plan) ?? str(price?.nickname) ?? str(price?.lookup_key) ?? idOf(price?.product);
  return {
    id: sub.id,
    status: String(sub.status ?? 'unknown'),
    mrr: subscriptionMrr(sub),
    currency: currency.toUpperCase(),
    effective_at: at,
    ...(idOf(sub.customer) ? { customer_id: idOf(sub.customer) } : {}),
    ...(plan ? { plan } : {}),
  };
}

/** Map one webhook event to ledger rows and subscription states; unknown types map to nothing. */
export function mapStripeEvent(event: any): Mapped {
  const out: Mapped = { ledger: [], subscriptions: [] };
  const obj = event?.data?.object;
  const at = secs(event?.created, Date.now());
  const push = (w: LedgerWrite | null) => w && out.ledger.push(w);
  switch (event?.type) {
    case 'charge.succeeded':
    case 'charge.captured':
      push(chargeToLedger(obj, at));
      break;
    case 'charge.refunded':
      for (const r of obj?.refunds?.data ?? []) push(refundToLedger(r, obj, at));
      break;
    case 'refund.created':
    case 'refund.updated':
    case 'charge.refund.updated':
      push(refundToLedger(obj, undefined, at));
      break;
    case 'charge.dispute.created':
      push(disputeToLedger(obj, at));
      break;
    case 'charge.dispute.funds_reinstated':
      push(disputeReversalToLedger(obj, at));
      break;
    case 'charge.dispute.closed':
      if (obj?.status === 'won') push(disputeReversalToLedger(obj, at));
      break;
    case 'customer.subscription.created':
    case 'customer.subscription.updated':
    case 'customer.subscription.deleted':
    case 'customer.subscription.paused':
    case 'customer.subscription.resumed': {
      const s = subscriptionToState(obj, at);
      if (s) out.subscriptions.push(s);
      break;
    }
    default:
      break;
  }
  return out;
}
