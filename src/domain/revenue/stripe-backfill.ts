/**
 * Backfill from a Stripe-compatible API: pages each list endpoint (`limit`, `starting_after`,
 * `has_more`) with the restricted key and hands every page to `write` (idempotent by object id, so a
 * row the webhook already wrote is replaced by the same values). `fetch` and the base URL are
 * injected so tests point it at a local fake of the list endpoints.
 */
import { chargeToLedger, disputeReversalToLedger, disputeToLedger, refundToLedger, subscriptionToState, type Mapped } from './stripe.js';

export interface BackfillProgress {
  resource: string;
  pages: number;
  rows: number;
}

/* eslint-disable @typescript-eslint/no-explicit-any */
const RESOURCES: { path: string; name: string; map: (o: any, now: number) => Mapped }[] = [
  { path: '/v1/charges', name: 'charges', map: (o) => ({ ledger: [chargeToLedger(o)].filter((x) => x !== null), subscriptions: [] }) },
  { path: '/v1/refunds', name: 'refunds', map: (o) => ({ ledger: [refundToLedger(o)].filter((x) => x !== null), subscriptions: [] }) },
  {
    path: '/v1/disputes',
    name: 'disputes',
    map: (o) => ({
      ledger: [disputeToLedger(o), o?.status === 'won' ? disputeReversalToLedger(o, typeof o.created === 'number' ? o.created * 1000 : Date.now()) : null].filter((x) => x !== null),
      subscriptions: [],
    }),
  },
  {
    path: '/v1/subscriptions?status=all',
    name: 'subscriptions',
    map: (o, now) => {
      // The list API gives the current state only: it is kept as of its start (or now when unknown).
      const at = typeof o?.start_date === 'number' ? o.start_date * 1000 : now;
      const s = subscriptionToState(o, o?.status === 'canceled' && typeof o.canceled_at === 'number' ? o.canceled_at * 1000 : at);
      return { ledger: [], subscriptions: s ? [s] : [] };
    },
  },
];

export class BackfillError extends Error {}

export async function runStripeBackfill(opts: {
  baseUrl: string;
  apiKey: string;
  fetch: typeof fetch;
  now: () => number;
  write: (m: Mapped) => Promise<number>;
  progress: (p: BackfillProgress) => void;
  pageSize?: number;
  maxPages?: number;
}): Promise<{ pages: number; rows: number }> {
  let pages = 0;
  let rows = 0;
  for (const r of RESOURCES) {
    let after: string | undefined;
    let resourcePages = 0;
    let resourceRows = 0;
    for (;;) {
      if (opts.maxPages !== undefined && pages >= opts.maxPages) throw new BackfillError(`stopped after ${opts.maxPages} pages`);
      const sep = r.path.includes('?') ? '&' : '?';
      const url = `${opts.baseUrl.replace(/\/+$/, '')}${r.path}${sep}limit=${opts.pageSize ?? 100}${after ? `&starting_after=${encodeURIComponent(after)}` : ''}`;
      const res = await opts.fetch(url, { headers: { authorization: `Bearer ${opts.apiKey}`, 'stripe-version': '2024-06-20' } });
      if (!res.ok) throw new BackfillError(`${r.name}: the provider answered ${res.status}`);
      const body = (await res.json()) as { data?: any[]; has_more?: boolean };
      const data = Array.isArray(body.data) ? body.data : [];
      const mapped: Mapped = { ledger: [], subscriptions: [] };
      for (const o of data) {
        const m = r.map(o, opts.now());
        mapped.ledger.push(...m.ledger);
        mapped.subscriptions.push(...m.subscriptions);
      }
      const n = await opts.write(mapped);
      pages++;
      resourcePages++;
      rows += n;
      resourceRows += n;
      opts.progress({ resource: r.name, pages: resourcePages, rows: resourceRows });
      if (!body.has_more || !data.length) break;
      after = String(data[data.length - 1]?.id ?? '');
      if (!after) break;
    }
  }
  return { pages, rows };
}
