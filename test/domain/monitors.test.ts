import { describe, expect, it } from 'vitest';
import { nextRun, parseCrontab, validateSchedule } from '../../src/domain/monitors/cron.js';
import { createAddressPolicy } from '../../src/domain/monitors/address-policy.js';
import { healthOfMonitor, parseExpectedStatus, statusExpected, uptimeBars, worstHealth } from '../../src/domain/monitors/health.js';

const at = (s: string) => Date.parse(s);
const iso = (ms: number) => new Date(ms).toISOString();

describe('cron schedules', () => {
  it('finds the next crontab time after a moment, in UTC and in a time zone across DST', () => {
    expect(iso(nextRun({ type: 'crontab', value: '*/15 * * * *', timezone: 'UTC' }, at('2026-01-01T10:07:00Z')))).toBe('2026-01-01T10:15:00.000Z');
    expect(iso(nextRun({ type: 'crontab', value: '0 9 * * 1-5', timezone: 'UTC' }, at('2026-01-02T09:00:00Z')))).toBe('2026-01-05T09:00:00.000Z'); // Friday → Monday
    // 02:30 Europe/Berlin: 01:30 UTC in winter, 00:30 UTC in summer (DST starts 2026-03-29).
    expect(iso(nextRun({ type: 'crontab', value: '30 2 * * *', timezone: 'Europe/Berlin' }, at('2026-03-01T12:00:00Z')))).toBe('2026-03-02T01:30:00.000Z');
    expect(iso(nextRun({ type: 'crontab', value: '30 3 * * *', timezone: 'Europe/Berlin' }, at('2026-04-01T12:00:00Z')))).toBe('2026-04-02T01:30:00.000Z');
    expect(iso(nextRun({ type: 'crontab', value: '@monthly', timezone: 'UTC' }, at('2026-01-15T00:00:00Z')))).toBe('2026-02-01T00:00:00.000Z');
    expect(iso(nextRun({ type: 'crontab', value: '0 0 * jan,jul sun', timezone: 'UTC' }, at('2026-02-01T00:00:00Z')))).toBe('2026-07-05T00:00:00.000Z');
  });

  it('counts interval schedules from their anchor', () => {
    const anchor = at('2026-01-01T00:00:00Z');
    expect(iso(nextRun({ type: 'interval', value: 2, unit: 'hour' }, at('2026-01-01T03:10:00Z'), anchor))).toBe('2026-01-01T04:00:00.000Z');
  });

  it('rejects malformed crontabs and unknown time zones with a reason', () => {
    expect(() => parseCrontab('* * *')).toThrow(/five fields/);
    expect(() => parseCrontab('61 * * * *')).toThrow(/outside 0-59/);
    expect(() => validateSchedule({ type: 'crontab', value: '* * * * *', timezone: 'Mars/Base' })).toThrow(/time zone/);
  });
});

describe('the address policy', () => {
  it('refuses private and special ranges unless allowed, including IPv4-mapped IPv6', () => {
    const strict = createAddressPolicy('');
    for (const a of ['127.0.0.1', '10.0.0.8', '172.16.4.4', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', '::1', 'fd00::1', 'fe80::1', '::ffff:127.0.0.1']) {
      expect(strict.check(a), a).toMatch(/SIGHTLINE_MONITOR_ALLOW_PRIVATE/);
    }
    for (const a of ['93.184.216.34', '2606:4700::1111']) expect(strict.check(a), a).toBeNull();
    const lab = createAddressPolicy('10.0.0.0/8, 127.0.0.1');
    expect(lab.check('10.9.9.9')).toBeNull();
    expect(lab.check('127.0.0.1')).toBeNull();
    expect(lab.check('127.0.0.2')).not.toBeNull();
    expect(createAddressPolicy('all').check('192.168.0.1')).toBeNull();
    expect(() => createAddressPolicy('not-an-ip')).toThrow(/not an address/);
  });
});

describe('health', () => {
  it('maps monitor states and rolls groups up to the worst child, ignoring unknown ones', () => {
    expect(['up', 'degraded', 'down', 'paused'].map((s) => healthOfMonitor(s as never))).toEqual(['operational', 'degraded', 'down', 'unknown']);
    expect(worstHealth(['operational', 'unknown', 'degraded'])).toBe('degraded');
    expect(worstHealth(['unknown', 'unknown'])).toBe('unknown');
    expect(worstHealth([])).toBe('unknown');
  });

  it('parses expected statuses and builds 90 daily bars ending today', () => {
    const r = parseExpectedStatus('200-299, 301');
    expect([200, 299, 301, 302, 500].map((s) => statusExpected(r, s))).toEqual([true, true, true, false, false]);
    expect(() => parseExpectedStatus('2xx')).toThrow();
    const now = at('2026-06-10T15:00:00Z');
    const today = Math.floor(now / 86_400_000);
    const bars = uptimeBars([{ day: today, ok: 9, degraded: 0, failed: 1 }, { day: today - 1, ok: 1, degraded: 1, failed: 0 }], now);
    expect(bars).toHaveLength(90);
    expect(bars.at(-1)).toMatchObject({ date: '2026-06-10', uptime: 0.9, health: 'down', checks: 10 });
    expect(bars.at(-2)).toMatchObject({ date: '2026-06-09', uptime: 1, health: 'degraded' });
    expect(bars[0]).toMatchObject({ date: '2026-03-13', uptime: null, health: 'unknown' });
  });
});
