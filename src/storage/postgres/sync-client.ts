/**
 * A synchronous PostgreSQL client (issue 20, groundwork for the control store): `query` blocks the
 * calling thread until the answer is back, as better-sqlite3 does, so repositories written against
 * a synchronous database (every one here; `atomic()` blocks included) can run on PostgreSQL without
 * turning ~320 call sites into promises. A worker thread owns one `pg` connection; a request goes
 * over a MessagePort, the caller sleeps in `Atomics.wait` on a shared flag, and takes the answer with
 * `receiveMessageOnPort` once the worker sets the flag. Nothing else runs on the calling thread
 * meanwhile, so a transaction opened with `transaction(fn)` can never interleave with another
 * request's statements. The cost: the thread waits for each round trip (`bench/pg-sync.ts`).
 */
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';

export interface SyncPgResult<R> {
  rows: R[];
  rowCount: number;
}

export class SyncPgError extends Error {
  constructor(
    message: string,
    /** The SQLSTATE (e.g. 23505 unique_violation), or a connection error code. */
    readonly code: string | null,
  ) {
    super(message);
    this.name = 'SyncPgError';
  }
}

export interface QueryOptions {
  guard?: boolean;
}

export interface SyncPg {
  /**
   * Runs one statement with `$1…` parameters; rows as objects. `guard`: inside a transaction, the
   * statement runs in a savepoint of its own, so its failure leaves the transaction usable (as a
   * failed statement does in SQLite) instead of aborting it.
   */
  query<R = Record<string, unknown>>(sql: string, params?: readonly unknown[], opts?: QueryOptions): SyncPgResult<R>;
  /** The same, rows as arrays of column values. */
  queryArrays(sql: string, params?: readonly unknown[], opts?: QueryOptions): SyncPgResult<unknown[]>;
  /**
   * Queues a parameterless statement (a savepoint opened or released) to run just before the next
   * statement sent, in the same round trip: its failure is that statement's failure. A ROLLBACK of the
   * whole transaction drops what is queued.
   */
  defer(sql: string): void;
  /** Runs `fn` in a transaction (a savepoint when nested): committed when it returns, rolled back when it throws. */
  transaction<T>(fn: () => T): T;
  /**
   * Round trips so far, for benchmarks and round-trip budgets in tests: `calls`, to the worker
   * thread (the calling thread waits on each); `statements`, from the worker to PostgreSQL (a
   * deferred savepoint, a guard's savepoint and its release are one each).
   */
  readonly trips: { readonly calls: number; readonly statements: number };
  close(): void;
}

export function openSyncPg(url: string, opts: { timeoutMs?: number } = {}): SyncPg {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const flag = new SharedArrayBuffer(4);
  const signal = new Int32Array(flag);
  // The worker and its port; replaced by a new one (a new connection) after one stopped answering.
  let port1!: MessagePort;
  let worker!: Worker;
  const spawn = () => {
    const channel = new MessageChannel();
    port1 = channel.port1;
    worker = new Worker(new URL('./sync-worker.mjs', import.meta.url), { workerData: { url, port: channel.port2, flag }, transferList: [channel.port2] });
    worker.unref();
  };
  spawn();
  let closed = false;
  let depth = 0;
  /** A worker was given up inside a transaction: its statements are refused until the transaction ends. */
  let lostTransaction = false;

  let seq = 0;
  const pause = new Int32Array(new SharedArrayBuffer(4));
  function roundTrip(message: Record<string, unknown>): { rows?: unknown[]; rowCount?: number; binary?: boolean; error?: { message: string; code: string | null } } {
    if (closed) throw new SyncPgError('The PostgreSQL client is closed.', null);
    // Each request carries a number the worker echoes: an answer is taken only for its own request,
    // so a late or stray message can never be read as the next statement's answer.
    const id = ++seq;
    Atomics.store(signal, 0, 0);
    port1.postMessage({ ...message, id });
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      if (Atomics.wait(signal, 0, 0, Math.max(1, deadline - Date.now())) === 'timed-out' || Date.now() > deadline) {
        // Given up: the next statement goes to a new worker and connection (PostgreSQL may be back by
        // then); a transaction this one was in is lost with the old connection.
        void worker.terminate();
        port1.close();
        spawn();
        if (depth > 0) lostTransaction = true;
        throw new SyncPgError(`PostgreSQL did not answer within ${timeoutMs} ms; the connection was closed.`, 'ETIMEDOUT');
      }
      // The flag can be seen before the posted answer is in the port's queue (seen once under load
      // in CI): look again after a millisecond rather than fail.
      const got = receiveMessageOnPort(port1);
      if (got && (got.message as { id?: number }).id === id) return got.message;
      if (!got) Atomics.wait(pause, 0, 0, 1);
    }
  }

  let deferred: string[] = [];
  const trips = { calls: 0, statements: 0 };
  function run<R>(sql: string, params: readonly unknown[] | undefined, array: boolean, guard = false): SyncPgResult<R> {
    if (sql === 'ROLLBACK') deferred = [];
    if (lostTransaction) {
      // Nothing of the transaction reached a commit; its statements must not run outside it on the new connection.
      if (sql === 'ROLLBACK' || sql === 'COMMIT') lostTransaction = false;
      if (sql === 'ROLLBACK') return { rows: [], rowCount: 0 };
      throw new SyncPgError('The connection to PostgreSQL was lost during this transaction: nothing of it was committed.', '08006');
    }
    const before = deferred;
    deferred = [];
    trips.calls++;
    trips.statements += 1 + before.length + (guard ? 2 : 0);
    const r = roundTrip({ sql, params: params ? textSafe(params) : [], array, guard, ...(before.length ? { before } : {}) });
    if (r.error) throw new SyncPgError(r.error.message, r.error.code);
    const rows = r.rows ?? [];
    if (r.binary) asBuffers(rows);
    return { rows: rows as R[], rowCount: r.rowCount ?? 0 };
  }

  const client: SyncPg = {
    trips,
    query: (sql, params, o) => run(sql, params, false, o?.guard),
    queryArrays: (sql, params, o) => run(sql, params, true, o?.guard),
    defer(sql) {
      deferred.push(sql);
    },
    transaction<T>(fn: () => T): T {
      const savepoint = depth > 0 ? `sp${depth}` : null;
      run(savepoint ? `SAVEPOINT ${savepoint}` : 'BEGIN', [], false);
      depth++;
      let out: T;
      try {
        out = fn();
        if (out && typeof (out as { then?: unknown }).then === 'function') {
          throw new SyncPgError('transaction(fn) takes a synchronous function: its statements would run after the commit.', null);
        }
      } catch (err) {
        depth--;
        run(savepoint ? `ROLLBACK TO SAVEPOINT ${savepoint}` : 'ROLLBACK', [], false);
        throw err;
      }
      depth--;
      run(savepoint ? `RELEASE SAVEPOINT ${savepoint}` : 'COMMIT', [], false);
      return out;
    },
    close() {
      if (closed) return;
      try {
        roundTrip({ close: true });
      } finally {
        closed = true;
        port1.close();
        void worker.terminate();
      }
    },
  };
  // Connects now: a wrong URL fails here, not at the first repository call.
  client.query('SELECT 1');
  return client;
}

/**
 * Parameters PostgreSQL accepts: its text cannot hold U+0000 (SQLite's can), so a NUL in a string
 * value — a hostile label, filter or feedback message, or an SDK's field — becomes U+FFFD, the
 * replacement character, instead of failing the statement (and the request with it, as a 500). The
 * same mapping applies to what is stored and what is looked up, so an equality filter carrying a NUL
 * still finds the value stored with it. (ClickHouse strings keep every byte; SQLite keeps the NUL.)
 */
function textSafe(params: readonly unknown[]): readonly unknown[] {
  let out: unknown[] | null = null;
  for (let i = 0; i < params.length; i++) {
    const v = params[i];
    if (typeof v === 'string' && v.includes('\0')) (out ??= [...params])[i] = v.replaceAll('\0', '\ufffd');
  }
  return out ?? params;
}

/**
 * A bytea value (a Buffer in the worker) arrives as a plain Uint8Array: the structured clone of a
 * posted message keeps the bytes, not the Buffer class. As a Buffer again, a packed blob reads as
 * better-sqlite3 gives it (`Buffer.concat`, `equals`, `readInt32LE`), on the same memory, no copy.
 */
function asBuffers(rows: unknown[]): void {
  const buf = (v: unknown) => (v instanceof Uint8Array && !Buffer.isBuffer(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : v);
  for (const row of rows) {
    if (Array.isArray(row)) for (let i = 0; i < row.length; i++) row[i] = buf(row[i]);
    else for (const k in row as Record<string, unknown>) (row as Record<string, unknown>)[k] = buf((row as Record<string, unknown>)[k]);
  }
}
