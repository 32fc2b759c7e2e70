import { describe, expect, it } from 'vitest';
import { EventQueryError, MAX_QUERY_TERMS, parseEventQuery } from '../../../src/domain/errors/event-query.js';

const NOW = Date.parse('2026-03-10T12:00:00.000Z');
const DAY = 86_400_000;
const parse = (q: string) => parseEventQuery(q, NOW);
const fails = (q: string) => {
  try {
    parse(q);
  } catch (e) {
    expect(e).toBeInstanceOf(EventQueryError);
    return (e as EventQueryError).message;
  }
  throw new Error(`expected ${q} to fail`);
};

describe('parseEventQuery', () => {
  it('reads an empty or blank query as no terms', () => {
    expect(parse('')).toEqual({ terms: [], hasTimestamp: false });
    expect(parse('   ')).toEqual({ terms: [], hasTimestamp: false });
  });

  it('reads free words and quoted phrases (with escapes) as text terms', () => {
    expect(parse('connection reset "broken pipe" -"not \\"this\\"" -noise').terms).toEqual([
      { kind: 'text', negated: false, text: 'connection' },
      { kind: 'text', negated: false, text: 'reset' },
      { kind: 'text', negated: false, text: 'broken pipe' },
      { kind: 'text', negated: true, text: 'not "this"' },
      { kind: 'text', negated: true, text: 'noise' },
    ]);
  });

  it('reads key:value, key:"quoted value", lists and negation, resolving aliases and normalising ids', () => {
    expect(parse('level:ERROR -env:staging service_name:"checkout api" level:[error, "fatal"] trace_id:ABCD-EF event_id:AB-CD').terms).toEqual([
      { kind: 'exact', negated: false, field: 'level', values: ['error'] },
      { kind: 'exact', negated: true, field: 'environment', values: ['staging'] },
      { kind: 'exact', negated: false, field: 'service', values: ['checkout api'] },
      { kind: 'exact', negated: false, field: 'level', values: ['error', 'fatal'] },
      { kind: 'exact', negated: false, field: 'trace', values: ['abcdef'] },
      { kind: 'exact', negated: false, field: 'event_id', values: ['abcd'] },
    ]);
  });

  it('reads message and title as substring fields', () => {
    expect(parse('message:"timed out" -title:peer').terms).toEqual([
      { kind: 'contains', negated: false, field: 'message', values: ['timed out'] },
      { kind: 'contains', negated: true, field: 'title', values: ['peer'] },
    ]);
  });

  it('turns time comparisons into bounds, a date into its UTC day and -24h into "since"', () => {
    const ms = Date.parse('2026-01-01T00:00:00Z');
    expect(parse('timestamp:>2026-01-01T00:00:00Z').terms).toEqual([{ kind: 'time', negated: false, field: 'timestamp', min: { ms, inclusive: false } }]);
    expect(parse('timestamp:>=2026-01-01T00:00:00Z').terms[0]).toMatchObject({ min: { ms, inclusive: true } });
    expect(parse('timestamp:<2026-01-01T00:00:00+00:00').terms[0]).toMatchObject({ max: { ms, inclusive: false } });
    expect(parse('timestamp:<=2026-01-01T00:00:00Z').terms[0]).toMatchObject({ max: { ms, inclusive: true } });
    expect(parse('timestamp:2026-01-01').terms[0]).toMatchObject({ min: { ms, inclusive: true }, max: { ms: ms + DAY, inclusive: false } });
    expect(parse('timestamp:>2026-01-01').terms[0]).toMatchObject({ min: { ms: ms + DAY, inclusive: true } });
    expect(parse('timestamp:<=2026-01-01').terms[0]).toMatchObject({ max: { ms: ms + DAY, inclusive: false } });
    expect(parse('timestamp:-24h').terms[0]).toMatchObject({ min: { ms: NOW - DAY, inclusive: true } });
    expect(parse(`received_at:<${ms}`).terms[0]).toMatchObject({ field: 'received_at', max: { ms, inclusive: false } });
    expect(parse('timestamp:-7d').hasTimestamp).toBe(true);
    expect(parse('received_at:-7d').hasTimestamp).toBe(false);
  });

  it('reads tags by value or by numeric comparison', () => {
    expect(parse('tags.region:eu-* -tag.browser:Firefox tags.http.status_code:>=500').terms).toEqual([
      { kind: 'tag', negated: false, key: 'region', values: ['eu-*'] },
      { kind: 'tag', negated: true, key: 'browser', values: ['Firefox'] },
      { kind: 'tag_compare', negated: false, key: 'http.status_code', op: '>=', value: 500 },
    ]);
  });

  it('explains what is wrong with a malformed query', () => {
    expect(fails('"open')).toMatch(/Unterminated quote starting at position 1/);
    expect(fails('level:"open')).toMatch(/Unterminated quote/);
    expect(fails('colour:red')).toMatch(/Unknown field `colour`.*Known fields: level, type, service/);
    expect(fails('https://example.com')).toMatch(/quote it/);
    expect(fails('level:')).toMatch(/has no value/);
    expect(fails('level:>=2')).toMatch(/does not support `>=`/);
    expect(fails('timestamp:>last-week')).toMatch(/needs a time/);
    expect(fails('timestamp:[2026-01-01,2026-01-02]')).toMatch(/needs a time|one time/);
    expect(fails('tags.code:<abc')).toMatch(/compares numbers/);
    expect(fails('level:[a,,b]')).toMatch(/Empty value/);
    expect(fails('level:[a,b')).toMatch(/Unterminated list/);
    expect(fails('a - b')).toMatch(/negates nothing/);
    expect(fails(Array.from({ length: MAX_QUERY_TERMS + 1 }, (_, i) => `w${i}`).join(' '))).toMatch(/at most 32 terms/);
  });

  it('keeps text that only looks like syntax when it is quoted', () => {
    expect(parse('"level:error" "a:b c"').terms).toEqual([
      { kind: 'text', negated: false, text: 'level:error' },
      { kind: 'text', negated: false, text: 'a:b c' },
    ]);
  });
});
