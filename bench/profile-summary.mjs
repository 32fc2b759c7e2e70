// Summarize a V8 .cpuprofile: self and inclusive shares of busy samples per function.
// usage: node bench/profile-summary.mjs FILE.cpuprofile [top=30]
import { readFileSync } from 'node:fs';
const p = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const top = Number(process.argv[3] ?? 30);
const byId = new Map(p.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const counts = new Map();
for (const s of p.samples) counts.set(s, (counts.get(s) ?? 0) + 1);
const total = p.samples.length;
const name = (n) => `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url.replace(/.*\/(src|node_modules)\//, '$1/')}:${n.callFrame.lineNumber + 1}`;
const self = new Map(), incl = new Map();
let idle = 0;
for (const [id, c] of counts) {
  const n = byId.get(id);
  if (n.callFrame.functionName === '(idle)') idle += c;
  const k = name(n);
  self.set(k, (self.get(k) ?? 0) + c);
  const seen = new Set();
  for (let x = id; x !== undefined; x = parent.get(x)) {
    const kk = name(byId.get(x));
    if (seen.has(kk)) continue;
    seen.add(kk);
    incl.set(kk, (incl.get(kk) ?? 0) + c);
  }
}
const busy = total - idle;
console.log(`samples ${total}, idle ${(100 * idle / total).toFixed(1)}%; percentages of busy samples (${busy})`);
console.log('--- self');
for (const [k, v] of [...self].filter(([k]) => !k.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, top)) console.log((100 * v / busy).toFixed(1).padStart(5), k);
console.log('--- inclusive');
for (const [k, v] of [...incl].filter(([k]) => !k.startsWith('(idle)') && !k.startsWith('(root)')).sort((a, b) => b[1] - a[1]).slice(0, top)) console.log((100 * v / busy).toFixed(1).padStart(5), k);
