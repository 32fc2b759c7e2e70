import { z } from 'zod';
import { defineOperation } from './define.js';
import { projectId, toIso } from './shared.js';
import { UnprocessableError, ValidationError } from '../src/core/errors.js';
import { sealSecret } from '../src/domain/revenue/secret-box.js';
import { analyticsErrors, requireAnalytics } from './revenue-shared.js';
import type { HandlerContext } from './define.js';

function serverKey(ctx: HandlerContext): string {
  const k = ctx.services.config.revenue.secretKey;
  if (!k) {
    throw new UnprocessableError('secret_key_not_configured', 'This server has no SIGHTLINE_SECRET_KEY, so it cannot store provider secrets encrypted; set it and retry.');
  }
  return k;
}

const webhookUrl = (ctx: HandlerContext, pid: string) => `${ctx.services.config.ingestUrl}/payments/stripe/${pid}`;

const connectionOut = z.object({
  provider: z.enum(['stripe']),
  connected: z.boolean(),
  key_hint: z.string().nullable().describe('Last characters of the key; the key itself is never returned.'),
  connected_at: z.string().nullable(),
  webhook_url: z.string().describe('Point the provider\'s webhook endpoint here.'),
  webhook_secret_set: z.boolean(),
  backfill: z.object({ state: z.enum(['idle', 'running', 'done', 'failed']) }),
});

export const connectPayments = defineOperation({
  operationId: 'integrations.connectPayments',
  tag: 'integrations',
  summary: 'Connect a payment provider with a restricted read-only key',
  description:
    'Connects a Stripe-compatible provider with a restricted read-only key (`rk_…`; a full secret key `sk_…` is refused). The key is encrypted at rest with the server key (SIGHTLINE_SECRET_KEY) and never returned. Connecting starts a backfill that pages the provider\'s charges, refunds, disputes and subscriptions into the ledger; follow it in revenue.status. Hidden from MCP.',
  method: 'POST',
  path: '/v1/projects/{project_id}/provider-connections/payments',
  scopes: ['providers:write'],
  risk: 'write',
  sensitive: true,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    provider: z.enum(['stripe']).default('stripe'),
    restricted_key: z.string().trim().min(8).max(512).describe('Restricted key with read access to charges, refunds, disputes and subscriptions.'),
  }),
  output: connectionOut,
  errors: [
    ...analyticsErrors,
    { status: 400, code: 'invalid_parameter', when: 'not a restricted key (rk_…)' },
    { status: 422, code: 'secret_key_not_configured', when: 'the server has no SIGHTLINE_SECRET_KEY to encrypt the key with' },
  ],
  example: { provider: 'stripe', restricted_key: 'rk_test_51ExampleKey' },
  handler(input, ctx) {
    const pid = requireAnalytics(ctx);
    if (!/^rk_(test|live)_[A-Za-z0-9]+$/.test(input.restricted_key)) {
      throw new ValidationError('`restricted_key` must be a restricted key (rk_test_… or rk_live_…) with read-only access; full secret keys are refused.', 'restricted_key');
    }
    const sealed = sealSecret(input.restricted_key, serverKey(ctx));
    const hint = `${input.restricted_key.slice(0, 8)}…${input.restricted_key.slice(-4)}`;
    ctx.services.revenue.connect(pid, input.provider, sealed, hint, ctx.now());
    ctx.services.revenueCache.bump(pid);
    void ctx.services.payments.startBackfill(pid, ctx.now);
    const conn = ctx.services.revenue.connection(pid)!;
    return {
      provider: 'stripe' as const,
      connected: true,
      key_hint: hint,
      connected_at: toIso(conn.connected_at),
      webhook_url: webhookUrl(ctx, pid),
      webhook_secret_set: !!conn.webhook_secret_sealed,
      backfill: { state: conn.backfill.state },
    };
  },
});

export const setPaymentsWebhookSecret = defineOperation({
  operationId: 'integrations.setPaymentsWebhookSecret',
  tag: 'integrations',
  summary: 'Save the payment webhook endpoint signing secret',
  description:
    'Saves the signing secret (`whsec_…`) of the webhook endpoint you created at the provider for `webhook_url`. Deliveries are then verified with it (Stripe-Signature: timestamped HMAC-SHA256, 5-minute tolerance, each event id applied once). Encrypted at rest, never returned. Hidden from MCP.',
  method: 'PUT',
  path: '/v1/projects/{project_id}/provider-connections/payments/webhook',
  scopes: ['providers:write'],
  risk: 'write',
  sensitive: true,
  projectScoped: true,
  input: z.strictObject({
    project_id: projectId,
    provider: z.enum(['stripe']).default('stripe'),
    secret: z.string().trim().regex(/^whsec_[A-Za-z0-9+/=_-]{8,256}$/, 'must be a webhook signing secret (whsec_…)'),
  }),
  output: z.object({ provider: z.enum(['stripe']), webhook_url: z.string(), secret_set: z.boolean(), set_at: z.string().nullable() }),
  errors: [
    ...analyticsErrors,
    { status: 400, code: 'invalid_parameter', when: 'not a whsec_ secret' },
    { status: 422, code: 'secret_key_not_configured', when: 'the server has no SIGHTLINE_SECRET_KEY to encrypt the secret with' },
  ],
  example: { secret: 'whsec_exampleSigningSecret' },
  handler(input, ctx) {
    const pid = requireAnalytics(ctx);
    const sealed = sealSecret(input.secret, serverKey(ctx));
    ctx.services.revenue.setWebhookSecret(pid, input.provider, sealed, ctx.now());
    ctx.services.revenueCache.bump(pid);
    const conn = ctx.services.revenue.connection(pid)!;
    return { provider: 'stripe' as const, webhook_url: webhookUrl(ctx, pid), secret_set: true, set_at: toIso(conn.webhook_set_at) };
  },
});
