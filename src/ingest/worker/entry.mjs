// Decode worker entry. Plain ESM on purpose: worker threads do not inherit the TypeScript loader of
// the main thread (vitest, tsx), so this registers tsx for the thread and then loads the TypeScript.
import { register } from 'tsx/esm/api';

register();
await import('./decode-worker.ts');
