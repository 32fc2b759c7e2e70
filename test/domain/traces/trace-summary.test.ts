import { describe, expect, it } from 'vitest';
import { isEntrySpan, orderSpans, spanKindName, spanStatusName, spanTree, summarizeTrace, type SpanCore } from '../../../src/domain/traces/trace-summary.js';

let n = 0;
function span(p: Partial<SpanCore> & { span_id: string }): SpanCore {
  n++;
  return {
    parent_span_id: null,
    name: `span ${n}`,
    operation: `op ${n}`,
    kind: 1,
    service_name: 'api',
    environment: 'prod',
    start_ms: 1000,
    end_ms: 1010,
    status_code: 0,
    ...p,
  };
}

describe('summarizeTrace', () => {
  it('picks the span without a parent as root and measures the whole extent of the trace', () => {
    const spans = [
      span({ span_id: 'c', parent_span_id: 'b', service_name: 'db-worker', start_ms: 1005, end_ms: 1300, status_code: 2 }),
      span({ span_id: 'a', name: 'GET /x', operation: 'GET /x', kind: 2, start_ms: 1000, end_ms: 1200 }),
      span({ span_id: 'b', parent_span_id: 'a', start_ms: 1001, end_ms: 1100 }),
    ];
    const t = summarizeTrace(spans)!;
    expect(t.root.span_id).toBe('a');
    expect(t.has_root).toBe(true);
    expect(t.started_ms).toBe(1000);
    expect(t.ended_ms).toBe(1300); // a child outliving the root still counts
    expect(t.duration_ms).toBe(300);
    expect(t.span_count).toBe(3);
    expect(t.error_count).toBe(1);
    expect(t.status).toBe('error');
    expect(t.services).toEqual(['api', 'db-worker']);
  });

  it('stands in the earliest span whose parent is missing when the root never arrived', () => {
    const spans = [
      span({ span_id: 'late-orphan', parent_span_id: 'gone2', start_ms: 1500 }),
      span({ span_id: 'child', parent_span_id: 'orphan', start_ms: 1000 }), // earliest, but its parent is here
      span({ span_id: 'orphan', parent_span_id: 'gone', start_ms: 1001 }),
    ];
    const t = summarizeTrace(spans)!;
    expect(t.has_root).toBe(false);
    expect(t.root.span_id).toBe('orphan');
    expect(t.status).toBe('ok');
  });

  it('takes the earliest of several parentless spans and survives parent cycles', () => {
    expect(summarizeTrace([span({ span_id: 'r2', start_ms: 20 }), span({ span_id: 'r1', start_ms: 10 })])!.root.span_id).toBe('r1');
    const cyc = summarizeTrace([span({ span_id: 'x', parent_span_id: 'y', start_ms: 5 }), span({ span_id: 'y', parent_span_id: 'x', start_ms: 3 })])!;
    expect(cyc.root.span_id).toBe('y');
    expect(summarizeTrace([])).toBeNull();
  });
});

describe('spanTree', () => {
  it('gives depths, child counts and missing parents', () => {
    const tree = spanTree([
      { span_id: 'a', parent_span_id: null },
      { span_id: 'b', parent_span_id: 'a' },
      { span_id: 'c', parent_span_id: 'a' },
      { span_id: 'd', parent_span_id: 'c' },
      { span_id: 'e', parent_span_id: 'missing' },
      { span_id: 'f', parent_span_id: 'e' },
    ]);
    expect(tree.get('a')).toEqual({ depth: 0, children: 2, parent_missing: false });
    expect(tree.get('d')).toEqual({ depth: 2, children: 0, parent_missing: false });
    expect(tree.get('e')).toEqual({ depth: 0, children: 1, parent_missing: true });
    expect(tree.get('f')!.depth).toBe(1);
  });

  it('terminates on cycles and self-parents', () => {
    const tree = spanTree([
      { span_id: 'x', parent_span_id: 'y' },
      { span_id: 'y', parent_span_id: 'x' },
      { span_id: 's', parent_span_id: 's' },
    ]);
    expect([tree.get('x')!.depth, tree.get('y')!.depth].sort()).toEqual([0, 1]);
    expect(tree.get('s')!.depth).toBe(0);
    expect(tree.get('s')!.children).toBe(0);
  });
});

describe('orderSpans and names', () => {
  it('orders by start, parents before children at equal start', () => {
    const spans = [span({ span_id: 'child', parent_span_id: 'root', start_ms: 1 }), span({ span_id: 'root', start_ms: 1 }), span({ span_id: 'early', parent_span_id: 'root', start_ms: 0 })];
    expect(orderSpans(spans, spanTree(spans)).map((s) => s.span_id)).toEqual(['early', 'root', 'child']);
  });

  it('names kinds and statuses and recognises entry spans', () => {
    expect([0, 1, 2, 3, 4, 5, 9].map(spanKindName)).toEqual(['unspecified', 'internal', 'server', 'client', 'producer', 'consumer', 'unspecified']);
    expect([0, 1, 2].map(spanStatusName)).toEqual(['unset', 'ok', 'error']);
    expect(isEntrySpan({ kind: 2, parent_span_id: 'p' })).toBe(true);
    expect(isEntrySpan({ kind: 5, parent_span_id: 'p' })).toBe(true);
    expect(isEntrySpan({ kind: 1, parent_span_id: null })).toBe(true);
    expect(isEntrySpan({ kind: 3, parent_span_id: 'p' })).toBe(false);
  });
});
