/**
 * The log query syntax (src/domain/logs/query.ts) and the shared time parser
 * (src/domain/metrics/window.ts) on their own: what each form of `q` and of `from`/`to` means.
 */
import { describe, expect, it } from 'vitest';
import { parseLogQuery, splitLogQuery } from '../../src/domain/logs/query.js';
import { isRelativeTime, parseTimeExpression, resolveWindow, WindowError } from '../../src/domain/metrics/window.js';

describe('parseLogQuery', () => {
  it('turns words, prefixes and "phrases" into one FTS5 expression', () => {
    expect(splitLogQuery(parseLogQuery('timeout upstream')!)).toEqual({ match: '"timeout" AND "upstream"' });
    expect(splitLogQuery(parseLogQuery('declin* "connection reset"')!)).toEqual({ match: '"declin"* AND "connection reset"' });
  });

  it('reads OR and parentheses (uppercase OR only; lowercase or is a word)', () => {
    expect(splitLogQuery(parseLogQuery('(timeout OR refused) db')!)).toEqual({ match: '("timeout" OR "refused") AND "db"' });
    expect(splitLogQuery(parseLogQuery('a or b')!)).toEqual({ match: '"a" AND "or" AND "b"' });
    expect(splitLogQuery(parseLogQuery('a OR b c')!)).toEqual({ match: '"a" OR ("b" AND "c")' });
  });

  it('reads key:value, key:"quoted value" and key:prefix* as attribute terms', () => {
    expect(parseLogQuery('host.name:web-1')).toEqual({ kind: 'attr', key: 'host.name', value: 'web-1', prefix: false });
    expect(parseLogQuery('user.name:"Ada Lovelace"')).toEqual({ kind: 'attr', key: 'user.name', value: 'Ada Lovelace', prefix: false });
    expect(parseLogQuery('k8s.pod.name:api-*')).toEqual({ kind: 'attr', key: 'k8s.pod.name', value: 'api-', prefix: true });
  });

  it('keeps the full-text part separate from the attribute part when they are ANDed', () => {
    expect(splitLogQuery(parseLogQuery('timeout host.name:web-1')!)).toEqual({
      match: '"timeout"',
      rest: { kind: 'attr', key: 'host.name', value: 'web-1', prefix: false },
    });
    const mixed = splitLogQuery(parseLogQuery('timeout OR host.name:web-1')!);
    expect(mixed.match).toBeUndefined();
    expect(mixed.rest).toEqual({ kind: 'or', items: [{ kind: 'text', fts: '"timeout"' }, { kind: 'attr', key: 'host.name', value: 'web-1', prefix: false }] });
  });

  it('never fails on stray syntax, and finds nothing searchable in punctuation alone', () => {
    expect(splitLogQuery(parseLogQuery('(timeout')!)).toEqual({ match: '"timeout"' });
    expect(splitLogQuery(parseLogQuery('timeout)')!)).toEqual({ match: '"timeout"' });
    expect(splitLogQuery(parseLogQuery('http://example.com/x')!).match).toBe('"http://example.com/x"');
    expect(parseLogQuery('"" *** ()')).toBeNull();
    expect(parseLogQuery('OR')).toBeNull();
  });
});

describe('parseTimeExpression', () => {
  const NOW = Date.UTC(2026, 0, 15, 12);
  it('reads relative forms against the given clock', () => {
    expect(parseTimeExpression('now', NOW)).toBe(NOW);
    expect(parseTimeExpression('-15m', NOW)).toBe(NOW - 15 * 60_000);
    expect(parseTimeExpression('-1h', NOW)).toBe(NOW - 3_600_000);
    expect(parseTimeExpression('now-7d', NOW)).toBe(NOW - 7 * 86_400_000);
    expect(parseTimeExpression('-1h30m', NOW)).toBe(NOW - 90 * 60_000);
    expect(parseTimeExpression('now+5m', NOW)).toBe(NOW + 5 * 60_000);
    expect(parseTimeExpression('-2w', NOW)).toBe(NOW - 14 * 86_400_000);
    expect(parseTimeExpression('-30s', NOW)).toBe(NOW - 30_000);
  });

  it('reads ISO 8601 with a timezone and refuses anything else', () => {
    expect(parseTimeExpression('2026-01-15T10:00:00Z', NOW)).toBe(Date.UTC(2026, 0, 15, 10));
    expect(parseTimeExpression('2026-01-15T12:00:00+02:00', NOW)).toBe(Date.UTC(2026, 0, 15, 10));
    for (const bad of ['2026-01-15T10:00:00', '-1y', '1h', 'yesterday', '', 'now-']) expect(parseTimeExpression(bad, NOW), bad).toBeNull();
    expect(isRelativeTime('2026-01-15T10:00:00Z')).toBe(false);
    expect(isRelativeTime('-5m')).toBe(true);
  });

  it('resolves windows with relative edges and names the culprit of a bad one', () => {
    expect(resolveWindow({ from: '-2h', to: '-1h' }, { now: NOW })).toEqual({ fromMs: NOW - 7_200_000, toMs: NOW - 3_600_000 });
    expect(() => resolveWindow({ from: '-1h', to: '-2h' }, { now: NOW })).toThrow(WindowError);
    expect(() => resolveWindow({ from: '-31d' }, { now: NOW })).toThrow(/maximum of 30 days/);
  });
});
