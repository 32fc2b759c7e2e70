/**
 * Rules every revenue operation shares: the product-analytics gate (spec: 403 `coming_soon` when the
 * server runs without analytics, `plan_upgrade_required` for a project without it), the read range
 * (default 30 days, at most 400), the reporting currency and the 5-minute result cache.
 */
import { z } from 'zod';
import { ForbiddenError, UnprocessableError, ValidationError } from '../src/core/errors.js';
import type { HandlerContext } from './define.js';
import { isoDateTime, parseIso } from './shared.js';
import { resolveRange } from '../src/domain/revenue/range.js';
import { FX_TABLE } from '../src/domain/revenue/fx.js';

export const DEFAULT_CURRENCY = 'USD';

export function requireAnalytics(ctx: HandlerContext): string {
  if (!ctx.services.config.revenue.analytics) {
    throw new ForbiddenError('coming_soon', 'Product analytics and revenue are not available on this server yet (SIGHTLINE_ANALYTICS is off).');
  }
  const p = ctx.services.identity.projectById(ctx.project!.id);
  if (!p?.product_analytics) {
    throw new ForbiddenError('plan_upgrade_required', 'Product analytics is not enabled for this project: an owner or admin turns it on with analytics.enable.');
  }
  return ctx.project!.id;
}

export const analyticsErrors = [
  { status: 403, code: 'plan_upgrade_required', when: 'the project does not have product analytics enabled' },
  { status: 403, code: 'coming_soon', when: 'the server runs with product analytics off' },
] as const;

export const rangeParams = {
  from: isoDateTime.optional().describe('Range start, ISO 8601 with timezone (default `to` − 30 days).'),
  to: isoDateTime.optional().describe('Range end, ISO 8601 with timezone (default now). At most 400 days after `from`.'),
};

export function readRange(input: { from?: string; to?: string }, now: number): { from: number; to: number } {
  const r = resolveRange(parseIso(input.from), parseIso(input.to), now);
  if ('param' in r) throw new ValidationError(r.message, r.param);
  return r;
}

/** Refuse a read that would cover more ledger rows than configured (spec: 422 RANGE_TOO_LARGE, never partial totals). */
export function checkRangeSize(ctx: HandlerContext, rows: number): void {
  const max = ctx.services.config.revenue.maxRangeRows;
  if (rows > max) {
    throw new UnprocessableError('RANGE_TOO_LARGE', `This range holds ${rows} ledger rows, more than the ${max} one read may cover; narrow \`from\`/\`to\`.`, 'from');
  }
}

export function reportingCurrency(ctx: HandlerContext, projectId: string): string {
  return ctx.services.revenue.currency(projectId) ?? DEFAULT_CURRENCY;
}

export const fxSchema = z.object({
  source: z.string(),
  date: z.string().describe('Date of the bundled reference rates.'),
  missing_currencies: z.array(z.string()).describe('Currencies without a reference rate: in by_currency, not in converted totals.'),
});

export function fxOut(missing: Iterable<string>) {
  return { source: FX_TABLE.source, date: FX_TABLE.date, missing_currencies: [...new Set(missing)].sort() };
}

export const rangeOut = { from: z.string(), to: z.string(), currency: z.string().describe('Reporting currency of every converted amount.') };

/** Cached computation keyed by operation and input (5 minutes, bumped by writes). */
export function cached<T>(ctx: HandlerContext, projectId: string, key: string, compute: () => T): T & { cached: boolean } {
  const r = ctx.services.revenueCache.get(projectId, key, ctx.now(), compute);
  return { ...r.value, cached: r.cached };
}
