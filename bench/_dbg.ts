import { createQuickJsExecutor } from '../sandbox/quickjs-executor.js';
const ex = createQuickJsExecutor({ wallClockMs: 800, poolSize: 1 }, { disableGuestInterrupt: true, killGraceMs: 0 });
const host = async (op: string, input: unknown) => ({ ok: true as const, value: { total: 2 } });
console.log(await ex.execute({ code: `const p = await api.errors.list({ project: 'web' }); return p.total;`, operations: ['errors.list'] }, host));
const ex2 = createQuickJsExecutor({ wallClockMs: 600, poolSize: 1 });
console.log(await ex2.execute({ code: `console.log('calling'); await api.errors.list({}); return 'no';`, operations: ['errors.list'] }, () => new Promise(() => {})));
await ex.close(); await ex2.close();
