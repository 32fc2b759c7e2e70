import type { HostCall, HostCallError } from '../../sandbox/executor.js';

export interface ErrorRow {
  id: string;
  project: string;
  title: string;
  count: number;
}

export const ERRORS: ErrorRow[] = [
  { id: 'e1', project: 'web', title: 'TypeError: undefined is not a function', count: 120 },
  { id: 'e2', project: 'web', title: 'ReferenceError: foo is not defined', count: 7 },
  { id: 'e3', project: 'api', title: 'Error: connection refused', count: 42 },
];

export const OPERATIONS = ['errors.list', 'errors.get', 'logs.search', 'projects.list'];

export class OperationFailure extends Error {
  constructor(public readonly error: HostCallError) {
    super(error.message);
  }
}

type Handler = (input: any) => unknown | Promise<unknown>;

export const DEFAULT_HANDLERS: Record<string, Handler> = {
  'errors.list': (input) => {
    const rows = ERRORS.filter((e) => !input?.project || e.project === input.project);
    return { items: rows.slice(0, input?.limit ?? 50), total: rows.length };
  },
  'errors.get': (input) => {
    const row = ERRORS.find((e) => e.id === input?.id);
    if (!row) throw new OperationFailure({ status: 404, code: 'not_found', message: `No error with id ${input?.id}`, param: 'id' });
    return row;
  },
  'logs.search': (input) => ({ items: [{ message: `log for ${input?.query}` }] }),
  'projects.list': () => ({ items: [{ slug: 'web' }, { slug: 'api' }] }),
};

/** An in-memory HostCall that records every call it receives. */
export function fakeHost(handlers: Record<string, Handler> = DEFAULT_HANDLERS) {
  const received: Array<{ operationId: string; input: unknown }> = [];
  const host: HostCall = async (operationId, input) => {
    received.push({ operationId, input });
    const handler = handlers[operationId];
    if (!handler) return { ok: false, error: { status: 404, code: 'no_handler', message: `no handler for ${operationId}` } };
    try {
      return { ok: true, value: await handler(input) };
    } catch (err) {
      if (err instanceof OperationFailure) return { ok: false, error: err.error };
      throw err;
    }
  };
  return { host, received };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
