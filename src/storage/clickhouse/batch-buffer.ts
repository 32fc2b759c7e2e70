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
}

/**
 * Rows bound for ClickHouse (the span, log and metric stores). Inside a write batch
 * (src/storage/write-batcher.ts) a job's rows are kept only when its savepoint is released, and the
 * batch's rows are inserted after the SQLite commit (`participant.commit()`), before any job of the
 * batch is acknowledged: an acknowledged row is in ClickHouse. Inserts are coalesced: while one is in
 * flight, the rows of later batches wait and go in the next one, so under load inserts grow large,
 * as ClickHouse wants. Rows added outside a batch are inserted at once.
 */
export function createBatchBuffer<B>(kind: BufferKind<B>) {
  let inBatch = false;
  let job = kind.empty();
  let batch = kind.empty();
  let sealed = kind.empty();
  let pending = kind.empty();
  let waiters: { resolve: () => void; reject: (e: unknown) => void }[] = [];
  let inFlight: Promise<void> | null = null;

  const pump = (): Promise<void> => {
    if (inFlight) return inFlight;
    inFlight = (async () => {
      while (!kind.isEmpty(pending)) {
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
      }
      inFlight = null;
    })();
    return inFlight;
  };

  /** Queues rows for insertion; resolves once the insert holding them succeeded. */
  const enqueue = (rows: B): Promise<void> => {
    if (kind.isEmpty(rows)) return Promise.resolve();
    kind.append(pending, rows);
    const p = new Promise<void>((resolve, reject) => waiters.push({ resolve, reject }));
    if (!inFlight) void pump();
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
      await enqueue(rows);
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
    insert,
  };
}
