import type { BatchParticipant } from '../write-batcher.js';

/** How a store's rows are held and inserted: `B` is what waits for one insert (an array of rows, or text per table). */
export interface BufferKind<B> {
  empty(): B;
  append(into: B, from: B): void;
  isEmpty(b: B): boolean;
  /** Inserts the rows; rejects when ClickHouse refused them. */
  insert(b: B): Promise<void>;
  /** Rows that will not be inserted (their job failed, their batch was rolled back, their insert failed). */
  forget?(b: B): void;
  /** How many rows `b` holds (for {@link BufferPacing.rows}); without it only the time counts. */
  size?(b: B): number;
}

/**
 * How often a store inserts under load (issue 20: "flush by size or time"). Each insert makes a part
 * per table in ClickHouse at a fixed cost (on 18.16 here: ~85 µs of server CPU per span row in
 * inserts of 512 rows, ~10 µs in inserts of 8,192), so when rows arrived while the previous insert
 * was running (several writers at once), the next insert waits until `lingerMs` after the previous
 * one started (or 4× that insert's time when longer, up to 5 × `lingerMs`), gathering what comes
 * meanwhile — unless `rows` rows already wait. Rows that arrived with no insert running (a lone
 * writer that sends its next batch once the last is acknowledged: waiting would only delay it) go at
 * once. Acknowledgements still come only after the insert. `lingerMs` 0: no waiting.
 */
export interface BufferPacing {
  lingerMs: number;
  rows: number;
}

export const NO_PACING: BufferPacing = { lingerMs: 0, rows: 0 };

/**
 * Rows bound for ClickHouse (the span, log and metric stores). Inside a write batch
 * (src/storage/write-batcher.ts) a job's rows are kept only when its savepoint is released, and the
 * batch's rows are inserted after the SQLite commit (`participant.commit()`), before any job of the
 * batch is acknowledged: an acknowledged row is in ClickHouse. Inserts are coalesced: while one is in
 * flight, the rows of later batches wait and go in the next one, so under load inserts grow large,
 * as ClickHouse wants. Rows added outside a batch are inserted at once.
 */
export function createBatchBuffer<B>(kind: BufferKind<B>, pacing: BufferPacing = NO_PACING) {
  let inBatch = false;
  let job = kind.empty();
  let batch = kind.empty();
  let sealed = kind.empty();
  let pending = kind.empty();
  let waiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  let inFlight: Promise<void> | null = null;
  /** When the last insert started and how long it took; the wake-up of a wait in progress. */
  let lastStart = 0;
  let lastMs = 0;
  /** An insert is running; rows arrived while one was (other writers are sending meanwhile). */
  let inserting = false;
  let busy = false;
  let hurry = false;
  let wake: (() => void) | null = null;
  const full = () => hurry || (pacing.rows > 0 && kind.size !== undefined && kind.size(pending) >= pacing.rows);
  const wakeUp = () => {
    const w = wake;
    wake = null;
    w?.();
  };
  /**
   * Waits, while fewer than `pacing.rows` rows wait, until `lingerMs` after the last insert started —
   * or 4× that insert's time when longer (up to 5 × `lingerMs`): a loaded server (slow inserts,
   * several processes inserting) gets fewer, larger inserts.
   */
  const linger = async () => {
    const gap = Math.min(5 * pacing.lingerMs, Math.max(pacing.lingerMs, 4 * lastMs));
    const left = lastStart + gap - Date.now();
    if (left <= 0 || full()) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => ((wake = null), resolve()), left);
      wake = () => (clearTimeout(timer), resolve());
    });
  };

  const pump = (): Promise<void> => {
    if (inFlight) return inFlight;
    inFlight = (async () => {
      while (!kind.isEmpty(pending)) {
        if (pacing.lingerMs > 0 && busy) await linger();
        hurry = false;
        busy = false;
        inserting = true;
        lastStart = Date.now();
        const rows = pending;
        const w = waiters;
        pending = kind.empty();
        waiters = [];
        try {
          await kind.insert(rows);
          for (const x of w) x.resolve();
        } catch (e) {
          kind.forget?.(rows);
          for (const x of w) x.reject(e);
        }
        inserting = false;
        lastMs = Date.now() - lastStart;
      }
      inFlight = null;
    })();
    return inFlight;
  };

  /** Queues rows for insertion; resolves once the insert holding them succeeded. */
  const enqueue = (rows: B): Promise<void> => {
    if (kind.isEmpty(rows)) return Promise.resolve();
    kind.append(pending, rows);
    if (inserting) busy = true;
    const p = new Promise<void>((resolve, reject) => waiters.push({ resolve, reject }));
    if (!inFlight) void pump();
    else if (wake && full()) wakeUp();
    return p;
  };

  const participant: BatchParticipant = {
    begin() {
      inBatch = true;
      job = kind.empty();
      batch = kind.empty();
    },
    jobEnd(ok) {
      if (ok) kind.append(batch, job);
      else kind.forget?.(job);
      job = kind.empty();
    },
    end() {
      inBatch = false;
      kind.append(sealed, batch);
      batch = kind.empty();
    },
    abort() {
      kind.forget?.(sealed);
      sealed = kind.empty();
    },
    commit() {
      const rows = sealed;
      sealed = kind.empty();
      return enqueue(rows);
    },
  };

  return {
    /** Adds rows: to the running job's inside a write batch, else inserted now (its failure is logged by nobody: use a batch to learn of it). */
    add(rows: B): void {
      if (inBatch) kind.append(job, rows);
      else void enqueue(rows).catch(() => {});
    },
    participant,
    /** Resolves when every row added so far (also outside a batch) is in ClickHouse. */
    async flush(): Promise<void> {
      const rows = sealed;
      sealed = kind.empty();
      const done = enqueue(rows);
      // Whatever waits goes now, without the rest of its linger.
      if (!kind.isEmpty(pending)) (hurry = true), wakeUp();
      await done;
      while (inFlight) await inFlight;
    },
  };
}

/** The kind for stores whose rows are objects inserted as one JSONEachRow insert into `table`. */
export function rowArrays<R>(insert: (rows: R[]) => Promise<void>): BufferKind<R[]> {
  return {
    empty: () => [],
    append: (into, from) => {
      for (const r of from) into.push(r);
    },
    isEmpty: (b) => b.length === 0,
    size: (b) => b.length,
    insert,
  };
}
