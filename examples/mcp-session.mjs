// An MCP session with Sightline's Code Mode: `search` the catalogue, then `execute` JavaScript that
// calls the API as `api.<tag>.<verb>(input)` inside a sandbox. Uses the official MCP SDK client over
// Streamable HTTP, authenticated with an API key (an OAuth token works too: Authorization: Bearer).
//
//   SIGHTLINE_API_KEY=<admin key> SIGHTLINE_URL=http://localhost:8080 node examples/mcp-session.mjs
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const apiKey = process.env.SIGHTLINE_API_KEY;
if (!apiKey) {
  console.error('Set SIGHTLINE_API_KEY (a key with read scopes, e.g. the admin key `npm start` printed).');
  process.exit(2);
}
const mcpUrl = process.env.SIGHTLINE_MCP_URL ?? `${(process.env.SIGHTLINE_URL ?? 'http://localhost:8080').replace(/\/+$/, '')}/mcp`;

const client = new Client({ name: 'sightline-example', version: '1.0.0' });
const transport = new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers: { 'x-service-key': apiKey } } });
await client.connect(transport);

const text = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');

const { tools } = await client.listTools();
console.log(`tools: ${tools.map((t) => t.name).join(', ')}`);

// 1. search: which operations exist for deployments, with their TypeScript signatures.
const found = await client.callTool({ name: 'search', arguments: { query: 'list deployments' } });
console.log('--- search ---');
// The hits are JSON: operationId, summary, TypeScript signatures and a ready `call` line for execute.
let hits;
try {
  hits = JSON.parse(text(found)).results;
} catch {
  hits = undefined;
}
console.log(Array.isArray(hits) ? hits.map((h) => `${h.operationId}: ${h.summary}${h.call ? `\n    ${h.call}` : ''}`).join('\n') : text(found));

// 2. execute: the body of an async function; `api` calls run outside the sandbox with this session's credential.
const code = `
  const page = await api.deployments.list({ limit: 5 });
  return { total: page.total, versions: page.data.map((d) => (d.service ?? '-') + '@' + (d.version ?? '-')) };
`;
const ran = await client.callTool({ name: 'execute', arguments: { code } });
console.log('--- execute ---');
console.log(text(ran));

await client.close();
if (found.isError || ran.isError) process.exit(1);
