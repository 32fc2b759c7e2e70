import type { ChEngine } from './client.js';

/**
 * The ClickHouse telemetry schema, versioned like the SQLite migrations: each entry's statements run
 * once, in order, and its version is recorded in `sightline_migrations`. Every statement runs on
 * clickhouse-server 18.16 (Debian's package) and on current releases (checked through chdb in the
 * tests): times are epoch milliseconds (Float64, microsecond precision), partitions are days, and
 * retention drops whole partitions (18.16 has no TTL).
 */
export interface ChMigration {
  version: number;
  name: string;
  statements: string[];
}

/** An entry_spans row's contribution to `entry_minutes` (migration 3), and its key. */
const ENTRY_MINUTE_COLS = `project_id, service_name, operation, toUInt32(intDiv(toUInt64(start_ms), 60000)) AS minute, environment, countState() AS n,
  sumState(toUInt64(status_code = 2)) AS errors, maxState(start_ms) AS last_ms, maxState(if(status_code = 2, 0., start_ms)) AS last_ok_ms,
  maxState(if(status_code = 2, start_ms, 0.)) AS last_error_ms`;
const ENTRY_MINUTE_KEY = 'project_id, service_name, operation, minute, environment';

/**
 * The tables whose rows are versions of an id (migration 8: a later write of the same id replaces the
 * earlier), with the tables migration 11 adds for each: `keys` (every version's start and version,
 * by id) and `superseded` (the versions a later one replaced). src/storage/clickhouse/ai-store.ts
 * writes the marks, ai-read.ts reads the rows not marked.
 */
export const VERSIONED = [
  { table: 'agent_observations', id: 'observation_id', keys: 'agent_observation_keys', superseded: 'agent_observations_superseded' },
  { table: 'agent_scores', id: 'score_id', keys: 'agent_score_keys', superseded: 'agent_scores_superseded' },
] as const;
export type VersionedTable = (typeof VERSIONED)[number];

const DAY = (col: string) => `toYYYYMMDD(toDateTime(toUInt32(intDiv(toUInt64(${col}), 1000))))`;
const MONTH = (col: string) => `toYYYYMM(toDateTime(toUInt32(intDiv(toUInt64(${col}), 1000))))`;

export const CH_MIGRATIONS: ChMigration[] = [
  {
    version: 1,
    name: 'spans',
    statements: [
      // One row per span. `parent_span_id` is '' for a root; attributes, events and links are JSON
      // text as received. Ordered by project and start: the trace list, operation stats and the
      // service map read time ranges of one project.
      `CREATE TABLE IF NOT EXISTS spans (
        project_id UInt32,
        start_ms Float64,
        trace_id String,
        span_id String,
        parent_span_id String,
        trace_state String,
        name String,
        operation String,
        kind UInt8,
        is_entry UInt8,
        service_name String,
        environment String,
        service_version String,
        end_ms Float64,
        duration_ms Float64,
        status_code UInt8,
        status_message String,
        attributes String,
        events String,
        links String,
        scope_name String,
        scope_version String,
        source String,
        received_ms Float64
      ) ENGINE = MergeTree PARTITION BY ${DAY('start_ms')} ORDER BY (project_id, start_ms)`,
      // One row per trace per insert (as SQLite's trace_chunks): finds a trace's time range by the
      // primary key, so a trace's spans are read from that range only. Partitioned by the day of its
      // latest span start: a chunk goes only once every span it names is past the cutoff.
      `CREATE TABLE IF NOT EXISTS trace_chunks (
        project_id UInt32,
        trace_id String,
        min_start_ms Float64,
        max_start_ms Float64,
        max_end_ms Float64,
        span_count UInt32,
        error_count UInt32
      ) ENGINE = MergeTree PARTITION BY ${DAY('max_start_ms')} ORDER BY (project_id, trace_id)`,
      // Distinct (service, operation) of entry spans per day, written when a process first sees one
      // on that day; read with DISTINCT (duplicates across processes are harmless). Expires with the
      // spans, so the groups listed are those with retained spans (to the day).
      `CREATE TABLE IF NOT EXISTS entry_operations (
        project_id UInt32,
        service_name String,
        operation String,
        day UInt32
      ) ENGINE = MergeTree PARTITION BY day ORDER BY (project_id, service_name, operation, day)`,
    ],
  },
  {
    version: 2,
    name: 'entry_spans',
    statements: [
      // Entry spans only (server and consumer spans, and roots), in the columns operation stats,
      // operation lists and the service map's counts read, ordered by project and operation: those
      // reads take the granules of their operations instead of every span of the window. The span
      // writer inserts an entry span here too (span-store.ts); expires with the spans.
      `CREATE TABLE IF NOT EXISTS entry_spans (
        project_id UInt32,
        service_name String,
        operation String,
        start_ms Float64,
        trace_id String,
        span_id String,
        environment String,
        duration_ms Float64,
        status_code UInt8
      ) ENGINE = MergeTree PARTITION BY ${DAY('start_ms')} ORDER BY (project_id, service_name, operation, start_ms)`,
      // The entry spans stored before this migration (once: a second process that applies it after
      // the first one's copy finds the table filled). Upgrade every process: one still running the
      // previous version writes no entry rows.
      `INSERT INTO entry_spans SELECT project_id, service_name, operation, start_ms, trace_id, span_id, environment, duration_ms, status_code
        FROM spans WHERE is_entry = 1 AND (SELECT count() FROM entry_spans) = 0`,
    ],
  },
  {
    version: 3,
    name: 'entry_minutes',
    statements: [
      // Entry spans counted per (group, UTC minute, environment): count, errors and the latest start
      // of all, ok and error spans, as aggregate states merged when read. Operation counts and
      // last-seen times and the service map's request counts read whole minutes here and the
      // window's partial first and last minutes from `spans` (traces-read.ts), instead of every
      // entry span of the window. Filled by the materialized view below on each insert into
      // entry_spans (by any process, whatever its version); expires with the spans.
      `CREATE TABLE IF NOT EXISTS entry_minutes (
        project_id UInt32,
        service_name String,
        operation String,
        minute UInt32,
        environment String,
        n AggregateFunction(count),
        errors AggregateFunction(sum, UInt64),
        last_ms AggregateFunction(max, Float64),
        last_ok_ms AggregateFunction(max, Float64),
        last_error_ms AggregateFunction(max, Float64)
      ) ENGINE = AggregatingMergeTree PARTITION BY toYYYYMMDD(toDateTime(minute * 60)) ORDER BY (project_id, service_name, operation, minute, environment)`,
      // The entry spans stored before this migration (once: a second process finds the table filled),
      // then the view that counts every later insert. Spans inserted between the two statements (by
      // a process still ingesting during the upgrade) are not counted here: upgrade with ingest stopped.
      `INSERT INTO entry_minutes SELECT ${ENTRY_MINUTE_COLS} FROM entry_spans WHERE (SELECT count() FROM entry_minutes) = 0 GROUP BY ${ENTRY_MINUTE_KEY}`,
      `CREATE MATERIALIZED VIEW IF NOT EXISTS entry_minutes_mv TO entry_minutes AS SELECT ${ENTRY_MINUTE_COLS} FROM entry_spans GROUP BY ${ENTRY_MINUTE_KEY}`,
    ],
  },
  {
    version: 4,
    name: 'logs',
    statements: [
      // One row per log record (log-store.ts), ordered by project and time: every log read takes a
      // time range of one project. `id` orders records of equal time (newest last, as SQLite's
      // rowid). Besides what a log row returns, the writer stores what the reads compare, derived
      // once: `http_method`; `attr_kv`/`res_kv` ('key\0value as text' of the top-level log and
      // resource attributes: `key:value` terms); `body_tokens`/`attr_tokens` (the FTS5 unicode61
      // tokens of the body and of the attribute text the SQLite writer indexes, as ' tok tok ':
      // words, prefixes and phrases are substring tests on them, logs-read.ts). An empty
      // `trace_id`/`span_id` is none. Expires by day partitions, like the spans (retention.ts).
      `CREATE TABLE IF NOT EXISTS logs (
        project_id UInt32,
        time_ms Float64,
        id UInt64,
        observed_ms Float64,
        severity_number UInt8,
        severity_text String,
        level String,
        body String,
        attributes String,
        resource String,
        trace_id String,
        span_id String,
        service_name String,
        environment String,
        release String,
        source String,
        connector_key String,
        scope_name String,
        http_method String,
        attr_kv Array(String),
        res_kv Array(String),
        body_tokens String,
        attr_tokens String,
        received_ms Float64
      ) ENGINE = MergeTree PARTITION BY ${DAY('time_ms')} ORDER BY (project_id, time_ms)`,
    ],
  },
  {
    version: 5,
    name: 'metric_points',
    statements: [
      // One row per metric point (metric-store.ts), ordered by project, metric name and time: every
      // metric read takes one metric's time range, or (the catalogue) one project's window. Columns
      // as SQLite's metric_points, with the resource's attributes as JSON text instead of its id,
      // `buckets`/`exemplars` '' for none, and what the attribute filters compare, derived once:
      // `attr_kv`/`res_kv` ('key\0value as text' of the top-level point and resource attributes, as
      // the logs table has them). `id` orders points of equal time (arrival order, as SQLite's
      // rowid). No rollups: reads aggregate the points (metrics-read.ts). Expires by day partitions.
      `CREATE TABLE IF NOT EXISTS metric_points (
        project_id UInt32,
        metric_name String,
        time_ms Float64,
        id UInt64,
        type String,
        unit String,
        description String,
        temporality String,
        monotonic UInt8,
        service_name String,
        environment String,
        series_key String,
        scope_name String,
        start_ms Nullable(Float64),
        value Nullable(Float64),
        count Nullable(Float64),
        sum Nullable(Float64),
        min Nullable(Float64),
        max Nullable(Float64),
        buckets String,
        attributes String,
        resource String,
        attr_kv Array(String),
        res_kv Array(String),
        flags UInt32,
        exemplars String,
        received_ms Float64
      ) ENGINE = MergeTree PARTITION BY ${DAY('time_ms')} ORDER BY (project_id, metric_name, time_ms)`,
    ],
  },
  {
    version: 6,
    name: 'monitor_results',
    statements: [
      // Uptime checks and cron check-ins (monitors-repo.ts; SQLite's `monitor_results`), written by
      // whichever process leads the scheduler or receives a check-in, read by every process. `seq`
      // orders results of equal time (newest last): increasing within a process. Absent values are
      // NULL as in SQLite. Expires by day partitions (retention.ts expireClickHouseMonitorResults).
      `CREATE TABLE IF NOT EXISTS monitor_results (
        project_id UInt32,
        monitor_id String,
        at_ms Float64,
        seq UInt64,
        status String,
        latency_ms Nullable(Float64),
        http_status Nullable(Int32),
        error Nullable(String),
        region Nullable(String),
        check_in_id Nullable(String)
      ) ENGINE = MergeTree PARTITION BY ${DAY('at_ms')} ORDER BY (project_id, monitor_id, at_ms)`,
      // Results counted per UTC day (SQLite's `monitor_daily`: up and ok, degraded, the rest; a run
      // in progress is not counted), filled by the view below on every insert and summed when read
      // (parts not yet merged hold several rows of a day). Kept longer than the results (400 days),
      // by month partitions.
      `CREATE TABLE IF NOT EXISTS monitor_daily (
        project_id UInt32,
        monitor_id String,
        day UInt32,
        ok UInt64,
        degraded UInt64,
        failed UInt64
      ) ENGINE = SummingMergeTree PARTITION BY toYYYYMM(toDateTime(day * 86400)) ORDER BY (project_id, monitor_id, day)`,
      `CREATE MATERIALIZED VIEW IF NOT EXISTS monitor_daily_mv TO monitor_daily AS SELECT project_id, monitor_id,
        toUInt32(intDiv(toUInt64(at_ms), 86400000)) AS day, toUInt64(status = 'up' OR status = 'ok') AS ok, toUInt64(status = 'degraded') AS degraded,
        toUInt64(status != 'up' AND status != 'ok' AND status != 'degraded') AS failed
        FROM monitor_results WHERE status != 'in_progress'`,
    ],
  },
  {
    version: 7,
    name: 'error_events',
    statements: [
      // Error events (SQLite's `error_events`; error-events.ts), one row per event whose id was new
      // to `error_event_ids` (kept with the groups). Ordered by project, group and event time: a
      // group's history is a primary-key range. Beside the stored columns, what SQLite computes from
      // JSON when it reads: the user's distinct key and fields, the tags as key/value arrays and each
      // value's number (NULL when it holds no digit) for tag comparisons. Day partitions of event time.
      `CREATE TABLE IF NOT EXISTS error_events (
        project_id UInt32,
        group_id String,
        timestamp_ms Float64,
        event_id String,
        fingerprint_group_id String,
        received_ms Float64,
        source String,
        platform String,
        level String,
        type String,
        message String,
        title String,
        service_name String,
        environment String,
        release String,
        transaction_name String,
        server_name String,
        trace_id Nullable(String),
        span_id Nullable(String),
        tags String,
        tag_keys Array(String),
        tag_values Array(String),
        tag_nums Array(Nullable(Float64)),
        user_json Nullable(String),
        user_key String,
        user_id String,
        user_email String,
        user_username String,
        payload String
      ) ENGINE = MergeTree PARTITION BY ${DAY('greatest(timestamp_ms, 0.)')} ORDER BY (project_id, group_id, timestamp_ms)`,
    ],
  },
  {
    version: 8,
    name: 'agent observations and scores',
    statements: [
      // AI agent observations (SQLite's `agent_observations`, ai-repo.ts; written by ai-store.ts, read
      // by ai-read.ts). A later write with the same observation id replaces the earlier: every write is
      // a new row with a larger `version`, and the reads take each id's row of the largest version
      // (since migration 11: the rows not marked superseded), so a replaced observation counts once
      // wherever its versions lie; merges drop old versions of the same (project, start, id). No rollups: aggregates are computed from the
      // current rows. Day partitions by start time (retention.ts expireClickHouseAgentObservations).
      `CREATE TABLE IF NOT EXISTS agent_observations (
        project_id UInt32,
        started_ms Float64,
        observation_id String,
        version UInt64,
        parent_observation_id String,
        trace_id String,
        span_id String,
        session_id String,
        user_id String,
        distinct_id String,
        visitor_id String,
        agent_id String,
        workflow_id String,
        step_id String,
        observation_type String,
        observation_name String,
        operation String,
        message String,
        level String,
        status String,
        source String,
        model String,
        provider String,
        tool_name String,
        duration_ms Float64,
        prompt_tokens Nullable(Float64),
        completion_tokens Nullable(Float64),
        total_tokens Nullable(Float64),
        cost_usd Nullable(Float64),
        cost_source String,
        received_ms Float64,
        environment String,
        release String,
        input_json String,
        output_json String,
        tags String,
        attributes String,
        had_input UInt8,
        had_output UInt8,
        had_system UInt8,
        ${['f_gen', 'f_gen_ok', 'f_chat', 'f_trace', 'f_input', 'f_system', 'f_output', 'f_model', 'f_tokens', 'f_cost', 'f_invalid_tokens', 'f_privacy', 'f_content', 'f_reasoning', 'f_tool_payload', 'f_error'].map((f) => `${f} UInt8`).join(',\n        ')}
      ) ENGINE = ReplacingMergeTree(version) PARTITION BY ${DAY('started_ms')} ORDER BY (project_id, started_ms, observation_id)`,
      // Scores (SQLite's `agent_scores`): replaced by score id the same way; `deleted` = tombstone.
      `CREATE TABLE IF NOT EXISTS agent_scores (
        project_id UInt32,
        started_ms Float64,
        score_id String,
        version UInt64,
        trace_id String,
        observation_id String,
        span_id String,
        session_id String,
        user_id String,
        name String,
        value Float64,
        string_value String,
        data_type String,
        source String,
        comment String,
        author String,
        model String,
        environment String,
        release String,
        metadata String,
        received_ms Float64,
        deleted UInt8
      ) ENGINE = ReplacingMergeTree(version) PARTITION BY ${DAY('started_ms')} ORDER BY (project_id, started_ms, score_id)`,
    ],
  },
  {
    version: 9,
    name: 'capture_events',
    statements: [
      // Product-analytics capture events (analytics-repo.ts; SQLite's `capture_events`), written by
      // the PostHog-compatible capture endpoint, read by analytics.status. Append-only: persons,
      // distinct ids, sessions and touches stay in SQLite. Times are epoch ms as received (a client's
      // timestamp may be fractional, hence Float64). Absent values are NULL as in SQLite; no dedup
      // by `uuid` (SQLite keeps every event sent too). `seq` orders events as SQLite's rowid
      // (increasing within a process). Partitioned by day (a time before 1970 in the first day's
      // partition); expires by day partitions (retention.ts expireClickHouseCaptureEvents).
      `CREATE TABLE IF NOT EXISTS capture_events (
        project_id UInt32,
        ts Float64,
        seq UInt64,
        event String,
        distinct_id String,
        session_id Nullable(String),
        pathname Nullable(String),
        uuid Nullable(String),
        properties String,
        received_at Float64
      ) ENGINE = MergeTree PARTITION BY ${DAY('greatest(ts, 0.)')} ORDER BY (project_id, ts)`,
    ],
  },
  {
    version: 10,
    name: 'release rollups and activity',
    statements: [
      // Release health (SQLite migration 014; release-store.ts writes, reads and expires them), so
      // every process reads every process's spans' release health. One row per cell per span batch
      // (service, environment, version, minute or hour): spans, requests, errors and the latency
      // sketch's buckets (src/domain/releases/sketch.ts) as a map of bucket index → count, the zero
      // bucket as the smallest Int32. Summing merges rows of the same cell in the background (the
      // map by bucket: `sketchMap`); reads sum and sumMap over the window, so they never depend on it.
      ...['release_rollup_1m', 'release_rollup_1h'].map(
        (t) => `CREATE TABLE IF NOT EXISTS ${t} (
        project_id UInt32,
        service_name String,
        environment String,
        t Float64,
        version String,
        spans UInt64,
        requests UInt64,
        errors UInt64,
        sketchMap Nested(k Int32, n UInt64)
      ) ENGINE = SummingMergeTree PARTITION BY ${DAY('greatest(t, 0.)')} ORDER BY (project_id, service_name, environment, t, version)`,
      ),
      // Span times per service, environment and version: each batch's clusters (no gap of 15
      // minutes or more inside), or SQLite's segments copied by `migrate --to-clickhouse` (`approx`:
      // the start is only known to the hour). Reads merge them into segments as SQLite keeps them.
      `CREATE TABLE IF NOT EXISTS release_activity (
        project_id UInt32,
        service_name String,
        environment String,
        version String,
        start_ms Float64,
        end_ms Float64,
        approx UInt8
      ) ENGINE = MergeTree PARTITION BY ${DAY('greatest(start_ms, 0.)')} ORDER BY (project_id, service_name, environment, version, start_ms)`,
    ],
  },
  {
    version: 11,
    name: 'agent observation and score versions: keys and superseded marks',
    statements: VERSIONED.flatMap((t) => [
      // Every stored version of an id: where it lies (its start, a key column of the table) and its
      // version, ordered by id, filled by a materialized view on each insert — a read by id finds
      // its rows through the primary key instead of reading every id of the project. Month partitions
      // and small granules: each id looked up reads one granule per month (a batch's ids are random:
      // with day partitions, a batch of 512 read every granule of 30 days). Expired by whole months
      // (retention.ts): a key may outlive its row by a month, which reads ignore.
      `CREATE TABLE IF NOT EXISTS ${t.keys} (
        project_id UInt32,
        ${t.id} String,
        started_ms Float64,
        version UInt64
      ) ENGINE = MergeTree PARTITION BY ${MONTH('started_ms')} ORDER BY (project_id, ${t.id}) SETTINGS index_granularity = 256`,
      // The versions a later version of the same id replaced, at their own start: written by
      // ai-store.ts after each insert, from the keys. Every read takes the rows not listed here — the
      // current rows — with no per-id aggregation over the table, and reads all of a project's marks
      // (or a window's, by the sort key): month partitions keep them in few parts (each insert makes
      // a part per partition it touches), dropped by whole months as the keys.
      `CREATE TABLE IF NOT EXISTS ${t.superseded} (
        project_id UInt32,
        started_ms Float64,
        ${t.id} String,
        version UInt64
      ) ENGINE = ReplacingMergeTree PARTITION BY ${MONTH('started_ms')} ORDER BY (project_id, started_ms, ${t.id}, version)`,
      `CREATE MATERIALIZED VIEW IF NOT EXISTS ${t.keys}_mv TO ${t.keys} AS SELECT project_id, ${t.id}, started_ms, version FROM ${t.table}`,
      // Rows stored before this migration: their keys, and the versions already replaced (a version
      // inserted meanwhile may be listed twice: reads and marks treat the lists as sets).
      `INSERT INTO ${t.keys} SELECT project_id, ${t.id}, started_ms, version FROM ${t.table}`,
      `INSERT INTO ${t.superseded} SELECT project_id, started_ms, ${t.id}, version FROM ${t.table}
        WHERE (project_id, ${t.id}) IN (SELECT project_id, ${t.id} FROM ${t.table} GROUP BY project_id, ${t.id} HAVING count() > 1)
        AND (project_id, ${t.id}, version) NOT IN (SELECT project_id, ${t.id}, max(version) FROM ${t.table} GROUP BY project_id, ${t.id} HAVING count() > 1)`,
    ]),
  },
];

/** Applies the migrations not yet recorded; safe to run from several processes (statements are idempotent). */
export async function migrateClickHouse(engine: ChEngine): Promise<number> {
  await engine.command(`CREATE TABLE IF NOT EXISTS sightline_migrations (version UInt32, name String, applied_ms Float64)
    ENGINE = MergeTree PARTITION BY tuple() ORDER BY version`);
  const done = new Set((await engine.query<{ version: number }>('SELECT version FROM sightline_migrations')).map((r) => Number(r.version)));
  let applied = 0;
  for (const m of CH_MIGRATIONS) {
    if (done.has(m.version)) continue;
    for (const s of m.statements) await engine.command(s);
    await engine.insert('sightline_migrations', [{ version: m.version, name: m.name, applied_ms: Date.now() }]);
    applied++;
  }
  return applied;
}
