import { catalogue } from '../operations/index.js';
import { createSearchIndex } from '../src/mcp/search.js';
import { searchAnswerer } from '../src/mcp/server.js';
import { SEARCH_EVAL } from '../test/mcp/search-eval.js';
const index = createSearchIndex(catalogue);
const ans = searchAnswerer(index, catalogue);
const rows = SEARCH_EVAL.map((t) => ({ t, n: Buffer.byteLength(JSON.stringify(ans(null, { query: t.task }).out)) }));
const sizes = rows.map(r=>r.n).sort((a, b) => a - b);
console.log('n', sizes.length, 'median', sizes[Math.floor(sizes.length / 2)], 'max', sizes.at(-1));
