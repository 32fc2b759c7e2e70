import { describe, expect, it } from 'vitest';
import { probableCause, runBuiltinTriage, similarGroups, suggestPriority, summarize, titleSimilarity, type TriageGroup } from '../../../src/domain/errors/triage.js';

const NOW = Date.parse('2026-08-20T10:00:00.000Z');
const H = 3_600_000;

const group = (over: Partial<TriageGroup> = {}): TriageGroup => ({
  id: 'g1',
  short_id: 'SHOP-1',
  type: 'TypeError',
  title: "TypeError: Cannot read properties of undefined (reading 'price')",
  culprit: 'lineTotal (src/cart/totals.ts)',
  level: 'error',
  status: 'unresolved',
  priority: 'medium',
  service_name: 'shop',
  environment: 'production',
  event_count: 42,
  first_seen: NOW - 26 * H,
  last_seen: NOW - 12 * 60_000,
  ...over,
});

const sentryPayload = {
  exception: {
    values: [
      { type: 'Error', value: 'outer' },
      {
        type: 'TypeError',
        value: "Cannot read properties of undefined (reading 'price')",
        stacktrace: {
          frames: [
            { filename: 'src/server.ts', function: 'route', lineno: 10, in_app: true },
            { filename: 'src/cart/totals.ts', function: 'lineTotal', lineno: 88, colno: 14, in_app: true },
            { filename: 'node_modules/lodash/sum.js', function: 'sum', lineno: 3, in_app: false },
          ],
        },
      },
    ],
  },
};

describe('summarize', () => {
  it('says what, how often, where, since when and the culprit in two sentences', () => {
    expect(summarize(group(), NOW)).toBe(
      'TypeError "TypeError: Cannot read properties of undefined (reading \'price\')" has occurred 42 times in service shop, environment production since 2026-08-19T08:00:00.000Z, last seen 12 min ago. Culprit: lineTotal (src/cart/totals.ts).',
    );
    expect(summarize(group({ type: 'message', title: 'Disk almost full', culprit: '', service_name: '', event_count: 1 }), NOW)).toBe(
      '"Disk almost full" has occurred 1 time in environment production since 2026-08-19T08:00:00.000Z, last seen 12 min ago.',
    );
  });
});

describe('probableCause', () => {
  it('points at the newest in-app frame of the innermost exception, with its message', () => {
    expect(probableCause({ message: '', payload: sentryPayload })).toEqual({
      file: 'src/cart/totals.ts',
      function: 'lineTotal',
      line: 88,
      column: 14,
      in_app: true,
      exception_type: 'TypeError',
      message: "Cannot read properties of undefined (reading 'price')",
      explanation: "TypeError is raised by lineTotal() in src/cart/totals.ts at line 88: \"Cannot read properties of undefined (reading 'price')\". Start there.",
    });
  });

  it('reads OTLP exception attributes and their textual stack trace', () => {
    const payload = {
      span: { name: 'GET /x' },
      exception: {
        'exception.type': 'RangeError',
        'exception.message': 'Invalid array length',
        'exception.stacktrace': 'RangeError: Invalid array length\n    at grow (/app/src/buffer.js:12:5)\n    at Object.<anonymous> (/app/node_modules/x/index.js:1:1)',
      },
    };
    expect(probableCause({ message: '', payload })).toMatchObject({ file: '/app/src/buffer.js', function: 'grow', line: 12, exception_type: 'RangeError', message: 'Invalid array length' });
  });

  it('says there is no stack trace when the exception has no frames, and null without an exception', () => {
    expect(probableCause({ message: '', payload: { exception: { values: [{ type: 'Boom', value: 'bang' }] } } })).toMatchObject({
      file: null,
      function: null,
      exception_type: 'Boom',
      explanation: expect.stringContaining('no stack trace'),
    });
    expect(probableCause({ message: 'just a message', payload: { message: 'just a message' } })).toBeNull();
    expect(probableCause(null)).toBeNull();
  });
});

describe('suggestPriority', () => {
  it('adds level, volume and recency points and removes one for a closed status', () => {
    expect(suggestPriority({ level: 'fatal', event_count: 5000, last_seen: NOW - 60_000, status: 'unresolved' }, NOW)).toMatchObject({ priority: 'critical', points: 6 });
    expect(suggestPriority({ level: 'error', event_count: 150, last_seen: NOW - 60_000, status: 'unresolved' }, NOW)).toMatchObject({ priority: 'high', points: 4 });
    expect(suggestPriority({ level: 'error', event_count: 3, last_seen: NOW - 5 * H, status: 'unresolved' }, NOW)).toMatchObject({ priority: 'medium', points: 2 });
    expect(suggestPriority({ level: 'warning', event_count: 3, last_seen: NOW - 10 * 24 * H, status: 'resolved' }, NOW)).toMatchObject({ priority: 'low', points: -1 });
    expect(suggestPriority({ level: 'info', event_count: 1, last_seen: NOW, status: 'unresolved' }, NOW).reasons).toEqual(['level info: +0', 'seen within the last hour: +1']);
  });
});

describe('similarGroups', () => {
  it('scores same type and title word overlap, keeps those at 0.35 or more, best 5', () => {
    const others = [
      { id: 'same-type', short_id: 'S-2', type: 'TypeError', title: 'TypeError: x is not a function', last_seen: 1 },
      { id: 'same-title', short_id: 'S-3', type: 'Error', title: "Error: Cannot read properties of undefined (reading 'price')", last_seen: 1 },
      { id: 'unrelated', short_id: 'S-4', type: 'KafkaError', title: 'KafkaError: broker down', last_seen: 1 },
      { id: 'g1', short_id: 'SHOP-1', type: 'TypeError', title: 'self is skipped', last_seen: 1 },
    ];
    const r = similarGroups(group(), others);
    expect(r.map((x) => x.id)).toEqual(['same-title', 'same-type']);
    expect(r[1]!.reason).toContain('same type TypeError');
    expect(r[0]!.score).toBeGreaterThan(r[1]!.score);
    const many = Array.from({ length: 9 }, (_, i) => ({ id: `t${i}`, short_id: `T-${i}`, type: 'TypeError', title: `t${i}`, last_seen: i }));
    expect(similarGroups(group(), many).map((x) => x.id)).toEqual(['t8', 't7', 't6', 't5', 't4']);
  });

  it('does not call message events similar for being messages', () => {
    expect(similarGroups(group({ type: 'message', title: 'a b' }), [{ id: 'm', short_id: 'M', type: 'message', title: 'c d', last_seen: 1 }])).toEqual([]);
    expect(titleSimilarity('a', '')).toBe(0);
  });
});

describe('runBuiltinTriage', () => {
  it('is deterministic and names its triager', () => {
    const input = { group: group(), latestEvent: { message: '', payload: sentryPayload }, otherGroups: [], now: NOW };
    const a = runBuiltinTriage(input);
    expect(a).toEqual(runBuiltinTriage(input));
    expect(a).toMatchObject({ triager: 'builtin-v1', generated_at: NOW, suggested_priority: { priority: 'medium' }, similar_groups: [] });
  });
});
