// The TypeScript client: every API operation as client.<tag>.<verb>(input), typed from the catalogue.
//
//   SIGHTLINE_API_KEY=<admin key> SIGHTLINE_URL=http://localhost:8080 npx tsx examples/query-with-client.ts
//
// The key needs deployments:write, deployments:read, events:ingest, errors:read (the admin key
// `npm start` printed holds every scope). `project_id` is left out: the client uses the key's project.
import { createClient, SightlineError } from 'sightline/client';

const apiKey = process.env.SIGHTLINE_API_KEY;
if (!apiKey) {
  console.error('Set SIGHTLINE_API_KEY (the admin key `npm start` printed) and optionally SIGHTLINE_URL.');
  process.exit(2);
}
const client = createClient({ baseUrl: process.env.SIGHTLINE_URL ?? 'http://localhost:8080', apiKey });

// 1. Record a deployment (sending the same provider + deployment_id again updates it).
const deployment = await client.deployments.create({
  deployment_id: process.env.EXAMPLE_DEPLOYMENT_ID ?? `example-${Date.now()}`,
  provider: 'github',
  service: 'example-api',
  version: '1.4.2',
  environment: 'production',
  status: 'ready',
  commit_sha: 'a1b2c3d',
});
console.log(`deployment ${deployment.deployment_id} recorded (${deployment.status})`);

// 2. Capture user feedback; the Idempotency-Key header makes a retry safe.
const feedback = await client.feedback.create({
  message: process.env.EXAMPLE_FEEDBACK ?? 'The export button does nothing',
  contact_email: 'ana@example.com',
  url: 'https://app.example.com/reports',
  idempotency_key: `example-feedback-${deployment.id}`,
});
console.log(`feedback ${feedback.id} captured`);

// 3. Read: a page of deployments, then every new feedback record across pages (cursor pagination).
const latest = await client.deployments.list({ service: 'example-api', limit: 5 });
console.log(`${latest.total} deployment(s) of example-api; latest: ${latest.data.map((d) => d.version).join(', ')}`);
let count = 0;
for await (const f of client.feedback.list.iterate({ status: ['new'], limit: 50 })) {
  if (count++ < 3) console.log(`  feedback: ${f.message}`);
}
console.log(`${count} new feedback record(s)`);

// 4. Errors carry the HTTP status, the code and the request id.
try {
  await client.feedback.get({ feedback_id: '00000000-0000-4000-8000-000000000000' });
} catch (err) {
  if (!(err instanceof SightlineError)) throw err;
  console.log(`as expected: ${err.status} ${err.code} (request ${err.requestId})`);
}
