/**
 * Why this file: the agent's channels and automations post JSON to URLs people configure. One sender
 * does it: it connects only to addresses the operator allows (the uptime monitors' address policy,
 * src/domain/monitors/address-policy.ts, checked on every resolved address actually dialled, so DNS
 * cannot point a webhook at the server's own network; SIGHTLINE_WEBHOOK_ALLOW_PRIVATE), follows no
 * redirects, gives up after a timeout and reads at most 64 KiB of the answer. It never throws:
 * callers (a scheduler job with retries and backoff) decide what a failure means.
 *
 * Signed webhooks (Stripe and GitHub style): header `Sightline-Signature: t=<unix seconds>,v1=<hex>`
 * where v1 = HMAC-SHA256(secret, `${t}.${raw body}`). A receiver recomputes it over the raw body,
 * compares in constant time, and rejects timestamps older than a few minutes (replays).
 */
import http from 'node:http';
import https from 'node:https';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { isIP } from 'node:net';
import { policyLookup } from './uptime-check.js';
import { createAddressPolicy, type AddressPolicy } from '../domain/monitors/address-policy.js';

export const SIGNATURE_HEADER = 'Sightline-Signature';
const ANSWER_CAP = 64 * 1024;

export interface WebhookResult {
  ok: boolean;
  status: number | null;
  error: string | null;
}

export interface WebhookSender {
  policy: AddressPolicy;
  /**
   * Why this URL may not be a webhook target, or null: `invalid_url` (not http(s), credentials in it)
   * or `address_not_allowed` (a literal private address the operator did not allow).
   */
  refuse(url: string): { code: 'invalid_url' | 'address_not_allowed'; reason: string } | null;
  post(url: string, body: string, headers?: Record<string, string>, timeoutMs?: number): Promise<WebhookResult>;
}

/** `t=…,v1=…` for this body and time. */
export function signatureHeader(secret: string, body: string, nowMs: number): string {
  const t = Math.floor(nowMs / 1000);
  return `t=${t},v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`;
}

/** Checks a `Sightline-Signature` header as a receiver would (tolerance in seconds, default 300). */
export function verifySignature(header: string, body: string, secret: string, nowMs: number, toleranceS = 300): boolean {
  const parts = Object.fromEntries(header.split(',').map((p) => p.trim().split('=') as [string, string]));
  const t = Number(parts.t);
  if (!Number.isInteger(t) || !parts.v1 || Math.abs(nowMs / 1000 - t) > toleranceS) return false;
  const want = Buffer.from(createHmac('sha256', secret).update(`${t}.${body}`).digest('hex'));
  const got = Buffer.from(parts.v1);
  return want.length === got.length && timingSafeEqual(want, got);
}

export function createWebhookSender(allowPrivate: string): WebhookSender {
  const policy = createAddressPolicy(allowPrivate, 'SIGHTLINE_WEBHOOK_ALLOW_PRIVATE');
  const lookup = policyLookup(policy);
  const sender: WebhookSender = {
    policy,
    refuse(url) {
      let u: URL;
      try {
        u = new URL(url);
      } catch {
        return { code: 'invalid_url', reason: 'is not a URL' };
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') return { code: 'invalid_url', reason: 'must be http:// or https://' };
      if (u.username || u.password) return { code: 'invalid_url', reason: 'may not carry credentials' };
      const host = u.hostname.replace(/^\[|\]$/g, '');
      const refused = isIP(host) ? policy.check(host) : null;
      return refused ? { code: 'address_not_allowed', reason: refused } : null;
    },
    post(url, body, headers = {}, timeoutMs = 10_000) {
      return new Promise((resolve) => {
        const refused = sender.refuse(url);
        if (refused) return resolve({ ok: false, status: null, error: `refused: the URL ${refused.reason}` });
        let settled = false;
        const done = (r: WebhookResult) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          req.destroy();
          resolve(r);
        };
        const u = new URL(url);
        const mod = u.protocol === 'https:' ? https : http;
        const req = mod.request(
          u,
          {
            method: 'POST',
            lookup,
            agent: false,
            headers: { 'content-type': 'application/json', 'user-agent': 'Sightline-Webhooks/1.0', 'content-length': Buffer.byteLength(body), ...headers },
          },
          (res) => {
            let size = 0;
            const status = res.statusCode ?? 0;
            const finish = () => done({ ok: status >= 200 && status < 300, status, error: status >= 200 && status < 300 ? null : `HTTP ${status}` });
            res.on('data', (c: Buffer) => {
              size += c.length;
              if (size >= ANSWER_CAP) finish();
            });
            res.on('end', finish);
            res.on('error', (e) => done({ ok: false, status, error: e.message }));
          },
        );
        const timer = setTimeout(() => done({ ok: false, status: null, error: `timed out after ${timeoutMs} ms` }), timeoutMs);
        req.on('error', (e) => done({ ok: false, status: null, error: e.message }));
        req.end(body);
      });
    },
  };
  return sender;
}
