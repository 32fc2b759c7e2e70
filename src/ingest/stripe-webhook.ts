/**
 * Stripe-compatible payment webhook: POST {ingest_url}/payments/stripe/{project_id}.
 * Verifies `Stripe-Signature` (timestamped HMAC-SHA256 over the raw body with the saved endpoint
 * secret, 5-minute tolerance), refuses an event id already applied (replay protection), and writes
 * charges, refunds, disputes, dispute reversals and subscription changes to the ledger in the same
 * transaction that records the event id. A refused delivery changes nothing.
 */
import type Router from '@koa/router';
import type Koa from 'koa';
import { readRawBody } from '../http/body.js';
import { AppError, ConflictError, NotFoundError, ValidationError } from '../core/errors.js';
import type { Sightline } from '../server.js';
import { mapStripeEvent, verifyStripeSignature } from '../domain/revenue/stripe.js';
import { openSecret } from '../domain/revenue/secret-box.js';

export function mountStripeWebhook(router: Router, s: Sightline): void {
  const { services } = s;
  router.post('/payments/stripe/:project_id', async (ctx: Koa.Context) => {
    const pid = String(ctx.params.project_id);
    const raw = await readRawBody(ctx, s.config.ingest.maxBodyBytes);
    const project = /^\d{1,15}$/.test(pid) ? services.identity.projectById(pid) : undefined;
    const conn = project ? services.revenue.connection(pid) : null;
    const key = s.config.revenue.secretKey;
    const secret = conn?.webhook_secret_sealed && key ? openSecret(conn.webhook_secret_sealed, key) : null;
    if (!project || !secret) throw new NotFoundError('Webhook endpoint');
    const t = s.core.now();
    const check = verifyStripeSignature(ctx.get('stripe-signature') || undefined, raw, secret, t);
    if (!check.ok) {
      const msg =
        check.reason === 'stale_timestamp'
          ? 'The Stripe-Signature timestamp is more than 5 minutes from now.'
          : check.reason === 'missing_header'
            ? 'A Stripe-Signature header (t=…,v1=…) is required.'
            : 'The Stripe-Signature does not match this endpoint\'s signing secret.';
      throw new AppError(400, 'invalid_request_error', `signature_${check.reason === 'bad_signature' ? 'invalid' : check.reason}`, msg);
    }
    let event: { id?: unknown; type?: unknown };
    try {
      event = JSON.parse(raw.toString('utf8'));
    } catch {
      throw new ValidationError('The webhook body is not JSON.', undefined, 'invalid_json');
    }
    if (typeof event?.id !== 'string' || typeof event.type !== 'string') throw new ValidationError('The webhook body is not an event (id and type).', undefined, 'invalid_event');
    const eventId = event.id;
    const type = event.type;
    const mapped = mapStripeEvent(event);
    const written = await services.writeBatch(() => {
      if (services.revenue.webhookEventSeen(pid, eventId)) return -1;
      services.revenue.recordWebhookEvent(pid, eventId, type, t);
      return services.payments.apply(pid, mapped, t);
    });
    if (written < 0) throw new ConflictError('event_replayed', `Event ${eventId} was already applied; it is not applied twice.`);
    ctx.status = 200;
    ctx.body = { received: true, written };
  });
}
