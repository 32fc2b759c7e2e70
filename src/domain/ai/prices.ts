/**
 * The bundled model price table: USD per million tokens, public list prices of each provider on
 * the table's date. Cost is computed from it only when an observation does not carry its own cost
 * (an SDK-sent cost always wins). `ai.stats` shows PRICE_TABLE_VERSION so a reader knows how old
 * the prices are; update the table and its date together.
 */
export const PRICE_TABLE_VERSION = '2026-11-01';

export interface ModelPrice {
  /** Lowercase model name prefix: `gpt-4o-mini` also prices `gpt-4o-mini-2024-07-18`. */
  model: string;
  provider: string;
  input_per_mtok: number;
  output_per_mtok: number;
}

export const PRICE_TABLE: readonly ModelPrice[] = [
  { model: 'gpt-5', provider: 'openai', input_per_mtok: 1.25, output_per_mtok: 10 },
  { model: 'gpt-5-mini', provider: 'openai', input_per_mtok: 0.25, output_per_mtok: 2 },
  { model: 'gpt-5-nano', provider: 'openai', input_per_mtok: 0.05, output_per_mtok: 0.4 },
  { model: 'gpt-4.1', provider: 'openai', input_per_mtok: 2, output_per_mtok: 8 },
  { model: 'gpt-4.1-mini', provider: 'openai', input_per_mtok: 0.4, output_per_mtok: 1.6 },
  { model: 'gpt-4.1-nano', provider: 'openai', input_per_mtok: 0.1, output_per_mtok: 0.4 },
  { model: 'gpt-4o', provider: 'openai', input_per_mtok: 2.5, output_per_mtok: 10 },
  { model: 'gpt-4o-mini', provider: 'openai', input_per_mtok: 0.15, output_per_mtok: 0.6 },
  { model: 'gpt-4-turbo', provider: 'openai', input_per_mtok: 10, output_per_mtok: 30 },
  { model: 'gpt-3.5-turbo', provider: 'openai', input_per_mtok: 0.5, output_per_mtok: 1.5 },
  { model: 'o1', provider: 'openai', input_per_mtok: 15, output_per_mtok: 60 },
  { model: 'o3', provider: 'openai', input_per_mtok: 2, output_per_mtok: 8 },
  { model: 'o3-mini', provider: 'openai', input_per_mtok: 1.1, output_per_mtok: 4.4 },
  { model: 'o4-mini', provider: 'openai', input_per_mtok: 1.1, output_per_mtok: 4.4 },
  { model: 'text-embedding-3-small', provider: 'openai', input_per_mtok: 0.02, output_per_mtok: 0 },
  { model: 'text-embedding-3-large', provider: 'openai', input_per_mtok: 0.13, output_per_mtok: 0 },
  { model: 'claude-opus-4', provider: 'anthropic', input_per_mtok: 15, output_per_mtok: 75 },
  { model: 'claude-sonnet-4', provider: 'anthropic', input_per_mtok: 3, output_per_mtok: 15 },
  { model: 'claude-haiku-4', provider: 'anthropic', input_per_mtok: 1, output_per_mtok: 5 },
  { model: 'claude-3-7-sonnet', provider: 'anthropic', input_per_mtok: 3, output_per_mtok: 15 },
  { model: 'claude-3-5-sonnet', provider: 'anthropic', input_per_mtok: 3, output_per_mtok: 15 },
  { model: 'claude-3-5-haiku', provider: 'anthropic', input_per_mtok: 0.8, output_per_mtok: 4 },
  { model: 'gemini-2.5-pro', provider: 'gcp.gemini', input_per_mtok: 1.25, output_per_mtok: 10 },
  { model: 'gemini-2.5-flash', provider: 'gcp.gemini', input_per_mtok: 0.3, output_per_mtok: 2.5 },
  { model: 'gemini-2.5-flash-lite', provider: 'gcp.gemini', input_per_mtok: 0.1, output_per_mtok: 0.4 },
  { model: 'gemini-2.0-flash', provider: 'gcp.gemini', input_per_mtok: 0.1, output_per_mtok: 0.4 },
  { model: 'mistral-large', provider: 'mistral_ai', input_per_mtok: 2, output_per_mtok: 6 },
  { model: 'mistral-small', provider: 'mistral_ai', input_per_mtok: 0.1, output_per_mtok: 0.3 },
  { model: 'command-r-plus', provider: 'cohere', input_per_mtok: 2.5, output_per_mtok: 10 },
  { model: 'command-r', provider: 'cohere', input_per_mtok: 0.15, output_per_mtok: 0.6 },
];

// Longest prefix first, so `gpt-4o-mini-…` matches gpt-4o-mini before gpt-4o.
const BY_LENGTH = [...PRICE_TABLE].sort((a, b) => b.model.length - a.model.length);
const cache = new Map<string, ModelPrice | null>();

/** The price entry of a model name (`openai/gpt-4o-mini`, `gpt-4o-mini-2024-07-18` …), or null. */
export function priceOf(model: string): ModelPrice | null {
  const key = model.trim().toLowerCase();
  if (!key) return null;
  let hit = cache.get(key);
  if (hit !== undefined) return hit;
  const bare = key.includes('/') ? key.slice(key.lastIndexOf('/') + 1) : key;
  hit = BY_LENGTH.find((p) => bare === p.model || bare.startsWith(p.model + '-') || bare.startsWith(p.model + '@') || bare.startsWith(p.model + ':')) ?? null;
  if (cache.size > 10_000) cache.clear();
  cache.set(key, hit);
  return hit;
}

/** USD cost of a generation from the table, or null when the model is unknown or no token count is known. */
export function costFromTable(model: string, promptTokens: number | null, completionTokens: number | null): number | null {
  if (promptTokens === null && completionTokens === null) return null;
  const p = priceOf(model);
  if (!p) return null;
  const usd = ((promptTokens ?? 0) * p.input_per_mtok + (completionTokens ?? 0) * p.output_per_mtok) / 1_000_000;
  return Math.round(usd * 1e10) / 1e10;
}
