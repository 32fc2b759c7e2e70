/**
 * The payment-provider side of revenue: applies mapped provider objects to the ledger (webhook and
 * backfill share it) and runs one backfill per project at a time against the configured
 * Stripe-compatible API. State (progress, errors) lives in the database; `idle()` lets tests and
 * shutdown wait for running backfills.
 */
import { toLedgerRow } from '../domain/revenue/ledger.js';
import type { Mapped } from '../domain/revenue/stripe.js';
import { runStripeBackfill } from '../domain/revenue/stripe-backfill.js';
import { openSecret } from '../domain/revenue/secret-box.js';
import type { ResultCache } from '../domain/revenue/result-cache.js';
import type { RevenueRepo } from '../storage/revenue-repo.js';
import type { AppConfig } from './config.js';

export interface PaymentsService {
  /** Write mapped rows and states (call inside a transaction). Returns rows changed. */
  apply(projectId: string, m: Mapped, now: number): number;
  /** Start (or join) the backfill of a project; resolves when it ends (never rejects). */
  startBackfill(projectId: string, now: () => number): Promise<void>;
  idle(): Promise<void>;
}

export function createPaymentsService(repo: RevenueRepo, config: AppConfig, cache: ResultCache, fetchImpl: typeof fetch = fetch): PaymentsService {
  const running = new Map<string, Promise<void>>();
  const apply = (projectId: string, m: Mapped, now: number) => {
    const n =
      repo.writeLedger(projectId, m.ledger.map((w) => toLedgerRow(w, 'stripe')), now) +
      repo.writeSubscriptions(
        projectId,
        m.subscriptions.map((s) => ({ ...s, customer_id: s.customer_id ?? null, plan: s.plan ?? null, source: 'stripe' })),
        now,
      );
    if (n) cache.bump(projectId);
    return n;
  };
  return {
    apply,
    startBackfill(projectId, now) {
      const existing = running.get(projectId);
      if (existing) return existing;
      const run = (async () => {
        const conn = repo.connection(projectId);
        const key = conn?.key_sealed && config.revenue.secretKey ? openSecret(conn.key_sealed, config.revenue.secretKey) : null;
        const started = now();
        if (!key) {
          repo.setBackfill(projectId, { state: 'failed', started_at: started, finished_at: started, error: 'no readable provider key (connect again)' });
          return;
        }
        repo.setBackfill(projectId, { state: 'running', started_at: started, pages: 0, rows: 0 });
        let pages = 0;
        let rows = 0;
        try {
          const r = await runStripeBackfill({
            baseUrl: config.revenue.stripeApiBase,
            apiKey: key,
            fetch: fetchImpl,
            now,
            write: async (m) => {
              const n = repo.transaction(() => apply(projectId, m, now()));
              rows += n;
              return n;
            },
            progress: (p) => {
              pages++;
              repo.setBackfill(projectId, { state: 'running', started_at: started, pages, rows, resource: p.resource });
            },
          });
          repo.setBackfill(projectId, { state: 'done', started_at: started, finished_at: now(), pages: r.pages, rows: r.rows });
        } catch (err) {
          // Safe text only: the provider's answer status or our own message, never the key.
          const message = err instanceof Error ? err.message.slice(0, 200) : 'backfill failed';
          repo.setBackfill(projectId, { state: 'failed', started_at: started, finished_at: now(), pages, error: message });
        } finally {
          running.delete(projectId);
        }
      })();
      running.set(projectId, run);
      return run;
    },
    async idle() {
      await Promise.all([...running.values()]);
    },
  };
}
