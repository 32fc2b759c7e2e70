/**
 * ai.session as agents think: the session's observations as a tree of agent steps, generations and
 * tool calls. Nodes come back depth-first (children by start time), each with its own tokens, cost
 * and latency and the totals of its subtree, so "where did the time and money go" is one read.
 * An observation whose parent is not an observation of the session hangs under its nearest ancestor
 * that is (walking `spanParents`, the trace's span → parent map, past plain spans such as an HTTP
 * client span); with none, it is a root.
 */
export interface TreeInput {
  observation_id: string;
  parent_observation_id: string;
  started_ms: number;
  duration_ms: number;
  total_tokens: number | null;
  cost_usd: number | null;
}

export interface TreeNode<T extends TreeInput> {
  row: T;
  depth: number;
  child_ids: string[];
  subtree: { observations: number; total_tokens: number; cost_usd: number; generations: number; tool_calls: number };
}

export function sessionTree<T extends TreeInput & { observation_type: string }>(rows: T[], spanParents: Map<string, string | null> = new Map()): TreeNode<T>[] {
  const byId = new Map(rows.map((r) => [r.observation_id, r]));
  const children = new Map<string, T[]>();
  const roots: T[] = [];
  for (const r of rows) {
    let p = r.parent_observation_id;
    const seen = new Set<string>();
    while (p && !byId.has(p) && spanParents.has(p) && !seen.has(p)) {
      seen.add(p);
      p = spanParents.get(p) ?? '';
    }
    if (p && p !== r.observation_id && byId.has(p)) {
      let list = children.get(p);
      if (!list) children.set(p, (list = []));
      list.push(r);
    } else roots.push(r);
  }
  const order = (a: T, b: T) => a.started_ms - b.started_ms || (a.observation_id < b.observation_id ? -1 : 1);
  roots.sort(order);
  const out: TreeNode<T>[] = [];
  const seen = new Set<string>();
  const visit = (r: T, depth: number): TreeNode<T>['subtree'] => {
    seen.add(r.observation_id);
    const kids = (children.get(r.observation_id) ?? []).filter((k) => !seen.has(k.observation_id)).sort(order);
    const node: TreeNode<T> = {
      row: r,
      depth,
      child_ids: kids.map((k) => k.observation_id),
      subtree: {
        observations: 1,
        total_tokens: r.total_tokens ?? 0,
        cost_usd: r.cost_usd ?? 0,
        generations: r.observation_type === 'generation' ? 1 : 0,
        tool_calls: r.observation_type === 'tool_call' ? 1 : 0,
      },
    };
    out.push(node);
    for (const k of kids) {
      const st = visit(k, depth + 1);
      node.subtree.observations += st.observations;
      node.subtree.total_tokens += st.total_tokens;
      node.subtree.cost_usd += st.cost_usd;
      node.subtree.generations += st.generations;
      node.subtree.tool_calls += st.tool_calls;
    }
    node.subtree.cost_usd = Math.round(node.subtree.cost_usd * 1e10) / 1e10;
    return node.subtree;
  };
  for (const r of roots) visit(r, 0);
  return out;
}
