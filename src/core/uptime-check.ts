/**
 * One HTTP(S) uptime check: connects only to addresses the policy allows (checked on the resolved
 * address actually dialled, so DNS tricks cannot reach a private range), does not follow redirects,
 * reads at most 1 MiB of the body for the body match, and gives up after the timeout.
 */
import http from 'node:http';
import https from 'node:https';
import dns from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { performance } from 'node:perf_hooks';
import type { AddressPolicy } from '../domain/monitors/address-policy.js';
import { parseExpectedStatus, statusExpected, type ResultStatus } from '../domain/monitors/health.js';
import type { HttpMonitorConfig } from '../storage/monitors-repo.js';

export interface CheckResult {
  status: ResultStatus;
  latency_ms: number | null;
  http_status: number | null;
  error: string | null;
}

const BODY_CAP = 1024 * 1024;

/**
 * A DNS lookup for http(s).request that refuses a host name resolving to an address the policy
 * refuses (so a public name pointing at a private address is caught too). Uptime checks and
 * outbound webhooks use it.
 */
export function policyLookup(policy: AddressPolicy): LookupFunction {
  return (hostname, options, cb) => {
    dns.lookup(hostname, { ...options, all: true }, (err, addresses) => {
      const done = cb as (e: Error | null, a: string | dns.LookupAddress[], f?: number) => void;
      if (err) return done(err, '', 4);
      const list = addresses as dns.LookupAddress[];
      for (const a of list) {
        const refused = policy.check(a.address);
        if (refused) return done(Object.assign(new Error(`refused: ${refused}`), { code: 'EREFUSED_POLICY' }), '', 4);
      }
      if ((options as { all?: boolean }).all) return done(null, list);
      done(null, list[0]!.address, list[0]!.family);
    });
  };
}

export function runHttpCheck(cfg: HttpMonitorConfig, policy: AddressPolicy): Promise<CheckResult> {
  return new Promise((resolve) => {
    let url: URL;
    try {
      url = new URL(cfg.url);
    } catch {
      return resolve({ status: 'down', latency_ms: null, http_status: null, error: 'invalid URL' });
    }
    const host = url.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host)) {
      const refused = policy.check(host);
      if (refused) return resolve({ status: 'down', latency_ms: null, http_status: null, error: `refused: ${refused}` });
    }
    const lookup = policyLookup(policy);
    const started = performance.now();
    let settled = false;
    const done = (r: CheckResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      resolve(r);
    };
    const mod = url.protocol === 'https:' ? https : http;
    const req = mod.request(url, { method: cfg.method, lookup, headers: { 'user-agent': 'Sightline-Uptime/1.0', accept: '*/*' }, agent: false }, (res) => {
      const status = res.statusCode ?? 0;
      const chunks: Buffer[] = [];
      let size = 0;
      const finish = () => {
        const latency = Math.round(performance.now() - started);
        if (!statusExpected(parseExpectedStatus(cfg.expected_status), status)) {
          return done({ status: 'down', latency_ms: latency, http_status: status, error: `unexpected status ${status} (expected ${cfg.expected_status})` });
        }
        if (cfg.body_contains !== null && !Buffer.concat(chunks).toString('utf8').includes(cfg.body_contains)) {
          return done({ status: 'down', latency_ms: latency, http_status: status, error: 'the response body does not contain the expected text' });
        }
        const slow = cfg.degraded_after_ms !== null && latency > cfg.degraded_after_ms;
        done({ status: slow ? 'degraded' : 'up', latency_ms: latency, http_status: status, error: slow ? `slow response (${latency} ms > ${cfg.degraded_after_ms} ms)` : null });
      };
      res.on('data', (c: Buffer) => {
        if (size < BODY_CAP) chunks.push(c);
        size += c.length;
        if (size >= BODY_CAP) finish();
      });
      res.on('end', finish);
      res.on('error', (e) => done({ status: 'down', latency_ms: null, http_status: status, error: e.message }));
    });
    const timer = setTimeout(() => done({ status: 'down', latency_ms: null, http_status: null, error: `timed out after ${cfg.timeout_ms} ms` }), cfg.timeout_ms);
    req.on('error', (e) => done({ status: 'down', latency_ms: null, http_status: null, error: e.message.startsWith('refused:') ? e.message : `connection failed: ${e.message}` }));
    if (cfg.method === 'POST') req.end('');
    else req.end();
  });
}
