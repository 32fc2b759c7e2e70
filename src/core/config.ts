/** Configuration from the environment. Every variable is listed in the README. */
export interface AppConfig {
  port: number;
  host: string;
  dbFile: string;
  baseUrl: string;
  /** Public URL of ingestion (default `${baseUrl}/ingest`). */
  ingestUrl: string;
  /** Optional separate port for ingestion (0: served on the main port under /ingest). */
  ingestPort: number;
  /** Public URL of the MCP endpoint (default `${baseUrl}/mcp`). */
  mcpUrl: string;
  /** General per-credential rate limit: requests per window. */
  rateLimit: { limit: number; windowSeconds: number };
  /** Server-wide JSON body cap in bytes. */
  bodyLimitBytes: number;
  /** Ingestion: compressed body cap, decompressed cap, and records per project per minute (0 = no quota). */
  ingest: { maxBodyBytes: number; maxDecompressedBytes: number; quotaPerMinute: number };
  /** Origins allowed to call /mcp from a browser (besides requests with no Origin). */
  mcpAllowedOrigins: string[];
  logLevel: string;
  /** Worker threads running MCP execute scripts (0: the sandbox default, 2). */
  sandboxPoolSize: number;
  /**
   * Product analytics and revenue: `analytics` false answers revenue operations with 403
   * `coming_soon` (SIGHTLINE_ANALYTICS=off); `secretKey` seals provider keys at rest
   * (SIGHTLINE_SECRET_KEY); `stripeApiBase` is the Stripe-compatible API the backfill pages
   * (SIGHTLINE_STRIPE_API_BASE); `maxRangeRows` is the ledger rows a read may cover before 422
   * RANGE_TOO_LARGE (SIGHTLINE_REVENUE_MAX_RANGE_ROWS).
   */
  revenue: { analytics: boolean; secretKey: string | null; stripeApiBase: string; maxRangeRows: number };
}

function int(v: string | undefined, dflt: number): number {
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`Expected a non-negative integer, got ${JSON.stringify(v)}`);
  return n;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<AppConfig> = {}): AppConfig {
  const port = overrides.port ?? int(env.PORT, 8080);
  const host = overrides.host ?? env.HOST ?? '0.0.0.0';
  const baseUrl = (overrides.baseUrl ?? env.SIGHTLINE_BASE_URL ?? `http://localhost:${port}`).replace(/\/+$/, '');
  const ingestPort = overrides.ingestPort ?? int(env.SIGHTLINE_INGEST_PORT, 0);
  const ingestDefault = ingestPort ? baseUrl.replace(/:\d+$/, '') + `:${ingestPort}/ingest` : `${baseUrl}/ingest`;
  return {
    port,
    host,
    dbFile: overrides.dbFile ?? env.SIGHTLINE_DB ?? './data/sightline.db',
    baseUrl,
    ingestUrl: (overrides.ingestUrl ?? env.SIGHTLINE_INGEST_URL ?? ingestDefault).replace(/\/+$/, ''),
    ingestPort,
    mcpUrl: (overrides.mcpUrl ?? env.SIGHTLINE_MCP_URL ?? `${baseUrl}/mcp`).replace(/\/+$/, ''),
    rateLimit: overrides.rateLimit ?? {
      limit: int(env.SIGHTLINE_RATE_LIMIT, 1200),
      windowSeconds: int(env.SIGHTLINE_RATE_LIMIT_WINDOW, 60),
    },
    bodyLimitBytes: overrides.bodyLimitBytes ?? int(env.SIGHTLINE_BODY_LIMIT, 1024 * 1024),
    ingest: overrides.ingest ?? {
      maxBodyBytes: int(env.SIGHTLINE_INGEST_MAX_BODY, 16 * 1024 * 1024),
      maxDecompressedBytes: int(env.SIGHTLINE_INGEST_MAX_DECOMPRESSED, 64 * 1024 * 1024),
      quotaPerMinute: int(env.SIGHTLINE_INGEST_QUOTA_PER_MINUTE, 0),
    },
    mcpAllowedOrigins:
      overrides.mcpAllowedOrigins ?? (env.SIGHTLINE_MCP_ALLOWED_ORIGINS ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    logLevel: overrides.logLevel ?? env.LOG_LEVEL ?? 'info',
    sandboxPoolSize: overrides.sandboxPoolSize ?? int(env.SIGHTLINE_SANDBOX_POOL_SIZE, 0),
    revenue: overrides.revenue ?? {
      analytics: !['off', '0', 'false'].includes((env.SIGHTLINE_ANALYTICS ?? 'on').toLowerCase()),
      secretKey: env.SIGHTLINE_SECRET_KEY || null,
      stripeApiBase: (env.SIGHTLINE_STRIPE_API_BASE ?? 'https://api.stripe.com').replace(/\/+$/, ''),
      maxRangeRows: int(env.SIGHTLINE_REVENUE_MAX_RANGE_ROWS, 5_000_000),
    },
  };
}
