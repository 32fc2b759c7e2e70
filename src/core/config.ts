import { dirname, join } from 'node:path';
/** Configuration from the environment. Every variable is listed in the README. */
export interface AppConfig {
  port: number;
  host: string;
  dbFile: string;
  /**
   * ClickHouse for spans (SIGHTLINE_CLICKHOUSE_URL, e.g. `http://127.0.0.1:8123/sightline`; the path
   * names the database). Unset: telemetry stays in SQLite.
   */
  clickhouseUrl: string | null;
  /**
   * ClickHouse insert pacing (batch-buffer.ts): when rows arrived during the last insert, a process
   * inserts into a table at most once every `lingerMs` (SIGHTLINE_CLICKHOUSE_FLUSH_MS, default 200)
   * unless `rows` rows wait (SIGHTLINE_CLICKHOUSE_FLUSH_ROWS, default 20000): larger inserts cost
   * ClickHouse far less per row. Rows that arrived with no insert running go at once; writes are
   * acknowledged after their insert either way.
   */
  clickhouseFlush: { lingerMs: number; rows: number };
  /**
   * PostgreSQL for control data (SIGHTLINE_DATABASE_URL, e.g. `postgres://sightline@127.0.0.1:5432/sightline`):
   * organizations, users, keys, OAuth, feedback, deployments, settings, automations, status pages,
   * remote access (src/storage/postgres/control-tables.ts). Unset: everything in SQLite.
   */
  databaseUrl: string | null;
  /**
   * This process's name among several behind one proxy (SIGHTLINE_INSTANCE, e.g. `sightline-2`): MCP
   * session ids start with it and a dot, so the proxy can send a session's requests back here.
   */
  instance: string | null;
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
  ingest: {
    maxBodyBytes: number;
    maxDecompressedBytes: number;
    quotaPerMinute: number;
    /** Decode worker threads (SIGHTLINE_INGEST_WORKERS; unset: cores − 1, 1 to 4; 0: decode on the main thread). */
    workers?: number;
    /** Overrides of the ingest limits (src/ingest/limits.ts; defaults and env in the README, "Ingest limits"). */
    limits?: Record<string, number>;
  };
  /** Origins allowed to call /mcp from a browser (besides requests with no Origin). */
  mcpAllowedOrigins: string[];
  logLevel: string;
  /** Worker threads running MCP execute scripts (0: the sandbox default, 2). */
  sandboxPoolSize: number;
  /** Take a backup before a migration that rewrites a large table (SIGHTLINE_BACKUP_BEFORE_MIGRATION, default on). */
  backupBeforeMigration: boolean;
  /**
   * WAL checkpoints of a listening server on a worker thread (src/storage/wal-checkpointer.ts), not in
   * the commits on the main thread (SIGHTLINE_WAL_CHECKPOINT=inline: SQLite's automatic checkpoint).
   */
  walCheckpointWorker: boolean;
  /** How long a SIGTERM waits for in-flight requests before closing their connections. */
  shutdownTimeoutMs: number;
  /**
   * Self-metrics: `GET /metrics` is off unless a bearer token is set (SIGHTLINE_METRICS_TOKEN) or it is
   * made public (SIGHTLINE_METRICS=public, for a scrape on a private network); the same figures can be
   * pushed as OTLP/JSON to another Sightline or collector (SIGHTLINE_SELF_METRICS_OTLP_URL, headers as
   * `k=v,k2=v2` in SIGHTLINE_SELF_METRICS_OTLP_HEADERS, every SIGHTLINE_SELF_METRICS_INTERVAL seconds).
   */
  metrics: { token: string | null; public: boolean; otlpUrl: string | null; otlpHeaders: Record<string, string>; otlpIntervalMs: number };
  /**
   * Telemetry expiry: no project keeps anything longer than `maxDays` (SIGHTLINE_RETENTION_MAX_DAYS),
   * a pass runs every SIGHTLINE_RETENTION_INTERVAL seconds deleting at most `batchRows` rows a transaction, and
   * SIGHTLINE_MAX_DB_BYTES (0: none) is the disk budget for the data in the database file. Under
   * saturating ingest expiry backs off to SIGHTLINE_RETENTION_SATURATED_SHARE of the event loop (0.04).
   */
  retention: { maxDays: number; intervalMs: number; batchRows: number; maxDbBytes: number; saturatedShare?: number; checkpointSlices?: boolean };
  /** Failed authentications allowed per client address per window before 429 (issue 10 item 4). */
  authFailureLimit: { limit: number; windowSeconds: number };
  /**
   * Behind reverse proxies (SIGHTLINE_TRUST_PROXY=1): how many proxies append to X-Forwarded-For.
   * The client address is the entry the outermost trusted proxy appended, never the leftmost one
   * (which the client itself can write).
   */
  trustProxy: { enabled: boolean; hops: number };
  /** Largest JSON response a read may return, in bytes; larger answers 413 with how to narrow it. */
  maxResponseBytes: number;
  /** Uptime monitors: private ranges allowed (CIDRs, or `all`) and days of results kept. */
  monitors: { allowPrivate: string; retentionDays: number };
  /** Automations: GitHub token for draft PRs (SIGHTLINE_GITHUB_TOKEN) and runs at once per project. */
  automations: { githubToken: string | null; concurrencyPerProject: number };
  /** Outbound mail: SMTP URL (null: the outbox file), sender, outbox file. */
  mail: { smtpUrl: string | null; from: string; outboxFile: string };
  /**
   * Product analytics and revenue: `analytics` false answers revenue operations with 403
   * `coming_soon` (SIGHTLINE_ANALYTICS=off); `secretKey` seals provider keys at rest
   * (SIGHTLINE_SECRET_KEY); `stripeApiBase` is the Stripe-compatible API the backfill pages
   * (SIGHTLINE_STRIPE_API_BASE); `maxRangeRows` is the ledger rows a read may cover before 422
   * RANGE_TOO_LARGE (SIGHTLINE_REVENUE_MAX_RANGE_ROWS).
   */
  revenue: { analytics: boolean; secretKey: string | null; stripeApiBase: string; maxRangeRows: number };
  /**
   * Outbound webhooks (agent channels, automations): private ranges they may reach, as for monitors
   * (SIGHTLINE_WEBHOOK_ALLOW_PRIVATE: CIDRs or addresses, or `all`; default none).
   */
  webhooks: { allowPrivate: string };
  /** The in-project agent: units of work per project per UTC day (SIGHTLINE_AGENT_DAILY_BUDGET, default 100). */
  agent: { dailyBudget: number };
  /**
   * The in-project agent's model: any OpenAI-compatible chat-completions endpoint with tool calling
   * (SIGHTLINE_LLM_BASE_URL, e.g. https://api.openai.com/v1; SIGHTLINE_LLM_API_KEY; SIGHTLINE_LLM_MODEL).
   * Without a base URL and model the built-in deterministic analyst answers. Caps per run:
   * SIGHTLINE_AGENT_MAX_TURNS (model turns), SIGHTLINE_AGENT_MAX_TOOL_CALLS, SIGHTLINE_AGENT_TIME_LIMIT (seconds).
   */
  llm: { baseUrl: string | null; apiKey: string | null; model: string | null; maxTurns: number; maxToolCalls: number; timeLimitMs: number };
  /**
   * The job scheduler's leader lease (SIGHTLINE_SCHEDULER_LEASE_MS, default 30 s, at least 2 s): with
   * several processes, how long after a leader dies another one takes over its monitors and jobs.
   */
  scheduler: { leaderLeaseMs: number };
  /**
   * Redis shared by several processes (SIGHTLINE_REDIS_URL, e.g. redis://127.0.0.1:6379/0): the
   * per-credential rate limit is counted there, one budget across processes; keys start with
   * `prefix` (SIGHTLINE_REDIS_PREFIX, default `sightline:`). Null: each process counts its own.
   * `timeoutMs` (SIGHTLINE_SHARED_LIMIT_TIMEOUT_MS, default 250): how long a request waits for the
   * shared count (Redis, or PostgreSQL without Redis) before counting in its own process.
   */
  redis: { url: string | null; prefix: string; timeoutMs?: number };
}

function headerList(v: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (v ?? '').split(',')) {
    const i = part.indexOf('=');
    if (i > 0) out[part.slice(0, i).trim()] = part.slice(i + 1).trim();
  }
  return out;
}

/** A share of the event loop: a number above 0 and at most 1. */
function share(v: string | undefined, dflt: number): number {
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0 || n > 1) throw new Error(`Expected a share above 0 and at most 1 (e.g. 0.04), got ${JSON.stringify(v)}`);
  return n;
}

function int(v: string | undefined, dflt: number): number {
  if (v === undefined || v === '') return dflt;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`Expected a non-negative integer, got ${JSON.stringify(v)}`);
  return n;
}

/** SIGHTLINE_INSTANCE starts MCP session ids, which must be visible ASCII: letters, digits, - and _. */
function instanceName(v: string | null): string | null {
  if (v !== null && !/^[A-Za-z0-9_-]{1,64}$/.test(v)) throw new Error(`SIGHTLINE_INSTANCE must be 1-64 letters, digits, - or _ (got ${JSON.stringify(v)})`);
  return v;
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<AppConfig> = {}): AppConfig {
  const port = overrides.port ?? int(env.PORT, 8080);
  const host = overrides.host ?? env.HOST ?? '0.0.0.0';
  const baseUrl = (overrides.baseUrl ?? env.SIGHTLINE_BASE_URL ?? `http://localhost:${port}`).replace(/\/+$/, '');
  const ingestPort = overrides.ingestPort ?? int(env.SIGHTLINE_INGEST_PORT, 0);
  const dbFile = overrides.dbFile ?? env.SIGHTLINE_DB ?? './data/sightline.db';
  const ingestDefault = ingestPort ? baseUrl.replace(/:\d+$/, '') + `:${ingestPort}/ingest` : `${baseUrl}/ingest`;
  return {
    port,
    host,
    dbFile,
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
    backupBeforeMigration: overrides.backupBeforeMigration ?? env.SIGHTLINE_BACKUP_BEFORE_MIGRATION !== '0',
    walCheckpointWorker: overrides.walCheckpointWorker ?? env.SIGHTLINE_WAL_CHECKPOINT !== 'inline',
    shutdownTimeoutMs: overrides.shutdownTimeoutMs ?? int(env.SIGHTLINE_SHUTDOWN_TIMEOUT_MS, 25_000),
    metrics: overrides.metrics ?? {
      token: env.SIGHTLINE_METRICS_TOKEN || null,
      public: env.SIGHTLINE_METRICS === 'public',
      otlpUrl: env.SIGHTLINE_SELF_METRICS_OTLP_URL || null,
      otlpHeaders: headerList(env.SIGHTLINE_SELF_METRICS_OTLP_HEADERS),
      otlpIntervalMs: int(env.SIGHTLINE_SELF_METRICS_INTERVAL, 60) * 1000,
    },
    retention: overrides.retention ?? {
      maxDays: Math.max(1, int(env.SIGHTLINE_RETENTION_MAX_DAYS, 400)),
      intervalMs: int(env.SIGHTLINE_RETENTION_INTERVAL, 300) * 1000,
      batchRows: Math.max(1, int(env.SIGHTLINE_RETENTION_BATCH_ROWS, 1000)),
      maxDbBytes: int(env.SIGHTLINE_MAX_DB_BYTES, 0),
      saturatedShare: share(env.SIGHTLINE_RETENTION_SATURATED_SHARE, 0.04),
      checkpointSlices: env.SIGHTLINE_RETENTION_CHECKPOINT === '1',
    },
    authFailureLimit: overrides.authFailureLimit ?? {
      limit: int(env.SIGHTLINE_AUTH_FAILURE_LIMIT, 60),
      windowSeconds: int(env.SIGHTLINE_AUTH_FAILURE_WINDOW, 60),
    },
    trustProxy: overrides.trustProxy ?? {
      enabled: env.SIGHTLINE_TRUST_PROXY === '1',
      hops: Math.max(1, int(env.SIGHTLINE_TRUST_PROXY_HOPS, 1)),
    },
    maxResponseBytes: overrides.maxResponseBytes ?? int(env.SIGHTLINE_MAX_RESPONSE_BYTES, 8 * 1024 * 1024),
    automations: overrides.automations ?? {
      githubToken: env.SIGHTLINE_GITHUB_TOKEN || null,
      concurrencyPerProject: int(env.SIGHTLINE_AUTOMATION_CONCURRENCY, 2),
    },
    monitors: overrides.monitors ?? {
      allowPrivate: env.SIGHTLINE_MONITOR_ALLOW_PRIVATE ?? '',
      retentionDays: Math.max(1, int(env.SIGHTLINE_MONITOR_RETENTION_DAYS, 90)),
    },
    mail: overrides.mail ?? {
      smtpUrl: env.SIGHTLINE_SMTP_URL || null,
      from: env.SIGHTLINE_MAIL_FROM || 'Sightline <no-reply@localhost>',
      outboxFile: env.SIGHTLINE_OUTBOX || join(dirname(dbFile === ':memory:' ? './data/x' : dbFile), 'outbox.jsonl'),
    },
    revenue: overrides.revenue ?? {
      analytics: !['off', '0', 'false'].includes((env.SIGHTLINE_ANALYTICS ?? 'on').toLowerCase()),
      secretKey: env.SIGHTLINE_SECRET_KEY || null,
      stripeApiBase: (env.SIGHTLINE_STRIPE_API_BASE ?? 'https://api.stripe.com').replace(/\/+$/, ''),
      maxRangeRows: int(env.SIGHTLINE_REVENUE_MAX_RANGE_ROWS, 5_000_000),
    },
    webhooks: overrides.webhooks ?? { allowPrivate: env.SIGHTLINE_WEBHOOK_ALLOW_PRIVATE ?? '' },
    agent: overrides.agent ?? { dailyBudget: Math.max(1, int(env.SIGHTLINE_AGENT_DAILY_BUDGET, 100)) },
    llm: overrides.llm ?? {
      baseUrl: env.SIGHTLINE_LLM_BASE_URL ? env.SIGHTLINE_LLM_BASE_URL.replace(/\/+$/, '') : null,
      apiKey: env.SIGHTLINE_LLM_API_KEY || null,
      model: env.SIGHTLINE_LLM_MODEL || null,
      maxTurns: Math.max(1, int(env.SIGHTLINE_AGENT_MAX_TURNS, 8)),
      maxToolCalls: Math.max(1, int(env.SIGHTLINE_AGENT_MAX_TOOL_CALLS, 12)),
      timeLimitMs: Math.max(1, int(env.SIGHTLINE_AGENT_TIME_LIMIT, 120)) * 1000,
    },
    redis: overrides.redis ?? {
      url: env.SIGHTLINE_REDIS_URL || null,
      prefix: env.SIGHTLINE_REDIS_PREFIX || 'sightline:',
      timeoutMs: Math.max(10, int(env.SIGHTLINE_SHARED_LIMIT_TIMEOUT_MS, 250)),
    },
    scheduler: overrides.scheduler ?? { leaderLeaseMs: Math.max(2000, int(env.SIGHTLINE_SCHEDULER_LEASE_MS, 30_000)) },
    clickhouseUrl: overrides.clickhouseUrl !== undefined ? overrides.clickhouseUrl : env.SIGHTLINE_CLICKHOUSE_URL || null,
    clickhouseFlush: overrides.clickhouseFlush ?? {
      lingerMs: Math.max(0, int(env.SIGHTLINE_CLICKHOUSE_FLUSH_MS, 200)),
      rows: Math.max(1, int(env.SIGHTLINE_CLICKHOUSE_FLUSH_ROWS, 20_000)),
    },
    databaseUrl: overrides.databaseUrl !== undefined ? overrides.databaseUrl : env.SIGHTLINE_DATABASE_URL || null,
    instance: instanceName(overrides.instance !== undefined ? overrides.instance : env.SIGHTLINE_INSTANCE || null),
  };
}
