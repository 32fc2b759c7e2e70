/** Pure revenue maths: sign rules, FX, MRR movements, attribution, impact, Stripe signatures and mapping. */
import { createHmac } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import Stripe from 'stripe';
import { signedAmount, toLedgerRow } from '../../../src/domain/revenue/ledger.js';
import { convertMinor, convertTotals, FX_TABLE, minorUnitExponent, roundMoney } from '../../../src/domain/revenue/fx.js';
import { computeMrr } from '../../../src/domain/revenue/mrr.js';
import { attribute, pickTouch } from '../../../src/domain/revenue/attribution.js';
import { estimateImpact } from '../../../src/domain/revenue/impact.js';
import { mapStripeEvent, subscriptionMrr, verifyStripeSignature } from '../../../src/domain/revenue/stripe.js';
import { openSecret, sealSecret } from '../../../src/domain/revenue/secret-box.js';
import { resolveRange } from '../../../src/domain/revenue/range.js';
import { decodeCaptureBody, parseCapturePayload, touchOf } from '../../../src/domain/analytics/capture.js';

const DAY = 86_400_000;
const T0 = Date.parse('2026-03-01T00:00:00Z');

describe('ledger sign rules', () => {
  it('makes refunds and disputes negative and payments and dispute reversals positive', () => {
    expect([signedAmount('payment', 500), signedAmount('refund', 200), signedAmount('dispute', 300), signedAmount('dispute_reversal', 300)]).toEqual([500, -200, -300, 300]);
    expect(toLedgerRow({ id: 'r', type: 'refund', amount: 100, currency: 'eur', occurred_at: 1 }, 'api')).toMatchObject({ amount: -100, currency: 'EUR', status: 'posted' });
  });
});

describe('FX', () => {
  it('converts through the euro table with ISO minor units', () => {
    expect(minorUnitExponent('JPY')).toBe(0);
    expect(minorUnitExponent('KWD')).toBe(3);
    expect(convertMinor(1000, 'EUR', 'USD')).toBeCloseTo(10 * FX_TABLE.rates.USD!, 10);
    expect(convertMinor(1000, 'JPY', 'EUR')).toBeCloseTo(1000 / FX_TABLE.rates.JPY!, 10);
    expect(convertMinor(100, 'XYZ', 'USD')).toBeNull();
  });
  it('lists currencies without a rate apart from the converted total', () => {
    const r = convertTotals(new Map([['USD', 1000], ['XYZ', 5000], ['EUR', 200]]), 'USD');
    expect(r.missing).toEqual(['XYZ']);
    expect(r.total).toBe(roundMoney(10 + 2 * FX_TABLE.rates.USD!, 'USD'));
  });
  it('limits a range to 400 days and defaults to the last 30', () => {
    expect(resolveRange(undefined, undefined, T0)).toEqual({ from: T0 - 30 * DAY, to: T0 });
    expect(resolveRange(T0 - 401 * DAY, T0, T0)).toMatchObject({ param: 'from' });
    expect(resolveRange(T0, T0 - 1, T0)).toMatchObject({ param: 'from' });
  });
});

describe('MRR movements', () => {
  const conv = (minor: number) => minor / 100;
  const at = (d: number) => T0 + d * DAY;
  it('splits the change between start and end into new, expansion, contraction, churn and reactivation', () => {
    const states = [
      { id: 'grow', status: 'active', mrr: 1000, currency: 'USD', effective_at: at(-10) },
      { id: 'grow', status: 'active', mrr: 3000, currency: 'USD', effective_at: at(5) },
      { id: 'shrink', status: 'active', mrr: 5000, currency: 'USD', effective_at: at(-40) },
      { id: 'shrink', status: 'active', mrr: 2000, currency: 'USD', effective_at: at(3) },
      { id: 'gone', status: 'active', mrr: 700, currency: 'USD', effective_at: at(-5) },
      { id: 'gone', status: 'canceled', mrr: 0, currency: 'USD', effective_at: at(8) },
      { id: 'fresh', status: 'active', mrr: 900, currency: 'USD', effective_at: at(2) },
      { id: 'back', status: 'active', mrr: 400, currency: 'USD', effective_at: at(-60) },
      { id: 'back', status: 'canceled', mrr: 0, currency: 'USD', effective_at: at(-30) },
      { id: 'back', status: 'active', mrr: 600, currency: 'USD', effective_at: at(9) },
      { id: 'later', status: 'active', mrr: 100, currency: 'USD', effective_at: at(20) },
    ];
    const r = computeMrr(states, { from: at(0), to: at(10) }, [at(1), at(10)], conv);
    expect(r.start_mrr).toBe(10 + 50 + 7);
    expect(r.end_mrr).toBe(30 + 20 + 9 + 6);
    expect(r.movements).toEqual({ new: 9, expansion: 20, contraction: 30, churn: 7, reactivation: 6 });
    expect(r.start_mrr + r.movements.new + r.movements.reactivation + r.movements.expansion - r.movements.contraction - r.movements.churn).toBe(r.end_mrr);
    expect(r.series).toEqual([{ at: at(1), mrr: 67 }, { at: at(10), mrr: 65 }]);
  });
});

describe('attribution', () => {
  const touches = [
    { ts: 10, source: 'google', medium: 'cpc', campaign: null },
    { ts: 20, source: 'newsletter', medium: 'email', campaign: 'spring' },
    { ts: 100, source: 'late', medium: null, campaign: null },
  ];
  it('picks the first or last touch with a value inside the lookback', () => {
    expect(pickTouch(touches, 50, 100, 'first_touch', 'source')?.source).toBe('google');
    expect(pickTouch(touches, 50, 100, 'last_touch', 'source')?.source).toBe('newsletter');
    expect(pickTouch(touches, 50, 35, 'first_touch', 'source')?.source).toBe('newsletter');
    expect(pickTouch(touches, 50, 100, 'first_touch', 'campaign')?.campaign).toBe('spring');
    expect(pickTouch(touches, 5, 100, 'last_touch', 'source')).toBeNull();
  });
  it('credits rows to touch, direct and unlinked with shares of net revenue', () => {
    const rows = [
      { type: 'payment', value: 60, occurred_at: 50, person: 'p:1' },
      { type: 'refund', value: -10, occurred_at: 60, person: 'p:1' },
      { type: 'payment', value: 30, occurred_at: 50, person: 'p:2' },
      { type: 'payment', value: 20, occurred_at: 50, person: null },
    ];
    const r = attribute(rows, (p) => (p === 'p:1' ? touches : []), { model: 'last_touch', dimension: 'source', lookbackMs: 1000, maxTouchRows: 100, round: (v) => v });
    expect(r.total).toBe(100);
    expect(r.rows).toEqual([
      { value: 'newsletter', kind: 'touch', net: 50, share: 50, payments: 1, people: 1 },
      { value: null, kind: 'direct', net: 30, share: 30, payments: 1, people: 1 },
      { value: null, kind: 'unlinked', net: 20, share: 20, payments: 1, people: 0 },
    ]);
  });
  it('keeps at most the given number of touch rows and says so', () => {
    const rows = ['a', 'b', 'c'].map((p, i) => ({ type: 'payment', value: 10 + i, occurred_at: 50, person: p }));
    const r = attribute(rows, (p) => [{ ts: 1, source: `s-${p}`, medium: null, campaign: null }], { model: 'first_touch', dimension: 'source', lookbackMs: 1000, maxTouchRows: 2, round: (v) => v });
    expect(r.truncated).toBe(true);
    expect(r.rows.map((x) => x.value)).toEqual(['s-c', 's-b']);
  });
});

describe('impact', () => {
  it('gives a range from identified revenue extended to all affected sessions, with a status for each gap', () => {
    expect(estimateImpact({ sessions: 0, identifiedSessions: 0, net: 0 }).status).toBe('no_sessions');
    expect(estimateImpact({ sessions: 3, identifiedSessions: 0, net: 0 }).status).toBe('no_identity');
    expect(estimateImpact({ sessions: 3, identifiedSessions: 1, net: -5 })).toEqual({ low: 0, high: 0, status: 'no_revenue' });
    expect(estimateImpact({ sessions: 4, identifiedSessions: 1, net: 25 })).toEqual({ low: 25, high: 100, status: 'estimated' });
  });
});

describe('Stripe-compatible events', () => {
  const secret = 'whsec_test_secret_value';
  const body = JSON.stringify({ id: 'evt_1', type: 'charge.succeeded', created: 1_770_000_000, data: { object: { id: 'ch_1', amount: 1500, currency: 'usd', status: 'succeeded', customer: 'cus_1', metadata: { distinct_id: 'u1', plan: 'pro' } } } });
  it('accepts a header made by the stripe library and refuses tampering, staleness and a missing header', () => {
    const now = 1_770_000_000_000;
    const header = Stripe.webhooks.generateTestHeaderString({ payload: body, secret, timestamp: now / 1000 });
    expect(verifyStripeSignature(header, Buffer.from(body), secret, now)).toEqual({ ok: true, timestamp: now / 1000 });
    expect(verifyStripeSignature(header, Buffer.from(body.replace('1500', '9500')), secret, now)).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyStripeSignature(header, Buffer.from(body), secret, now + 301_000)).toEqual({ ok: false, reason: 'stale_timestamp' });
    expect(verifyStripeSignature(undefined, Buffer.from(body), secret, now)).toEqual({ ok: false, reason: 'missing_header' });
    const manual = `t=${now / 1000},v1=${'0'.repeat(64)},v1=${createHmac('sha256', secret).update(`${now / 1000}.${body}`).digest('hex')}`;
    expect(verifyStripeSignature(manual, Buffer.from(body), secret, now).ok).toBe(true);
  });
  it('maps charges, refunds, disputes, won disputes and subscriptions', () => {
    expect(mapStripeEvent(JSON.parse(body)).ledger).toEqual([
      { id: 'ch_1', type: 'payment', amount: 1500, currency: 'USD', occurred_at: 1_770_000_000_000, customer_id: 'cus_1', distinct_id: 'u1', plan: 'pro', status: 'posted' },
    ]);
    expect(mapStripeEvent({ type: 'refund.created', data: { object: { id: 're_1', amount: 500, currency: 'usd', charge: 'ch_1', status: 'succeeded', created: 1 } } }).ledger[0]).toMatchObject({ type: 'refund', parent_id: 'ch_1', amount: 500 });
    expect(mapStripeEvent({ type: 'charge.dispute.closed', created: 2, data: { object: { id: 'dp_1', amount: 700, currency: 'usd', status: 'lost' } } }).ledger).toEqual([]);
    expect(mapStripeEvent({ type: 'charge.dispute.closed', created: 2, data: { object: { id: 'dp_1', amount: 700, currency: 'usd', status: 'won' } } }).ledger[0]).toMatchObject({ id: 'dp_1:reversal', type: 'dispute_reversal' });
    const sub = { id: 'sub_1', status: 'active', currency: 'usd', items: { data: [{ quantity: 2, price: { unit_amount: 12000, currency: 'usd', recurring: { interval: 'year', interval_count: 1 }, nickname: 'team' } }] } };
    expect(subscriptionMrr(sub)).toBe(2000);
    expect(mapStripeEvent({ type: 'customer.subscription.deleted', created: 3, data: { object: { ...sub, status: 'canceled' } } }).subscriptions[0]).toMatchObject({ id: 'sub_1', mrr: 0, status: 'canceled', plan: 'team', effective_at: 3000 });
  });
  it('seals secrets so only the server key opens them', () => {
    const sealed = sealSecret('rk_test_abc', 'server-key');
    expect(sealed).not.toContain('rk_test_abc');
    expect(openSecret(sealed, 'server-key')).toBe('rk_test_abc');
    expect(openSecret(sealed, 'other-key')).toBeNull();
  });
});

describe('PostHog capture payloads', () => {
  const ev = { event: '$pageview', distinct_id: 'anon-1', properties: { $current_url: 'https://shop.example/pricing?utm_source=google&utm_medium=cpc', $session_id: 's1', token: 'tok' }, timestamp: '2026-03-01T00:00:00Z' };
  const json = JSON.stringify([ev]);
  it('decodes JSON, gzip by flag or magic bytes, base64 and form data', () => {
    const opts = { maxBytes: 1 << 20 };
    expect(decodeCaptureBody(Buffer.from(json), opts)).toEqual([ev]);
    expect(decodeCaptureBody(gzipSync(json), { ...opts, compression: 'gzip-js' })).toEqual([ev]);
    expect(decodeCaptureBody(gzipSync(json), opts)).toEqual([ev]);
    expect(decodeCaptureBody(Buffer.from(Buffer.from(json).toString('base64')), { ...opts, compression: 'base64' })).toEqual([ev]);
    expect(decodeCaptureBody(Buffer.from(`data=${encodeURIComponent(Buffer.from(json).toString('base64'))}`), { ...opts, contentType: 'application/x-www-form-urlencoded' })).toEqual([ev]);
  });
  it('reads the token, UTMs from the URL and the touch of a pageview', () => {
    const b = parseCapturePayload([ev], T0);
    expect(b.token).toBe('tok');
    expect(b.events[0]).toMatchObject({ utm_source: 'google', utm_medium: 'cpc', pathname: '/pricing', session_id: 's1', ts: T0 });
    expect(touchOf(b.events[0]!)).toEqual({ source: 'google', medium: 'cpc', campaign: null });
    const ref = parseCapturePayload({ api_key: 'k', batch: [{ ...ev, properties: { $current_url: 'https://shop.example/', $referrer: 'https://news.ycombinator.com/item' } }] }, T0);
    expect(touchOf(ref.events[0]!)).toEqual({ source: 'news.ycombinator.com', medium: 'referral', campaign: null });
    expect(parseCapturePayload({ event: '$identify', distinct_id: 'user-1', properties: { $anon_distinct_id: 'anon-1' } }, T0).events[0]!.merge_from).toBe('anon-1');
  });
});
