/**
 * `sightline connector run|fingerprint`: the CLI face of the connector (src/remote-connector/run.ts).
 *   sightline connector run --server https://sightline.example.com --state ./connector.json \
 *     --profiles ./profiles.json [--enroll <one-time code>] [--interval-ms 5000]
 *   sightline connector fingerprint --state ./connector.json
 * Exits 3 when the server has revoked the connector.
 */
import { parseArgs } from 'node:util';
import { fingerprintOf, runConnector } from './run.js';

const USAGE = 'usage: sightline connector run --server <url> --state <file> --profiles <file> [--enroll <code>] [--interval-ms <n>]\n       sightline connector fingerprint --state <file>\n';

export async function connectorCommand(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  const { values } = parseArgs({
    args: rest,
    options: { server: { type: 'string' }, state: { type: 'string' }, profiles: { type: 'string' }, enroll: { type: 'string' }, 'interval-ms': { type: 'string' } },
    strict: true,
  });
  if (sub === 'fingerprint' && values.state) {
    process.stdout.write(fingerprintOf(values.state) + '\n');
    return 0;
  }
  if (sub !== 'run' || !values.server || !values.state || !values.profiles) {
    process.stderr.write(`sightline: ${USAGE}`);
    return 2;
  }
  const controller = new AbortController();
  process.once('SIGTERM', () => controller.abort());
  process.once('SIGINT', () => controller.abort());
  const interval = Number(values['interval-ms'] ?? 5000);
  const outcome = await runConnector({
    server: values.server,
    stateFile: values.state,
    profilesFile: values.profiles,
    enrollCode: values.enroll ?? process.env.SIGHTLINE_CONNECTOR_ENROLL_CODE,
    intervalMs: Number.isFinite(interval) && interval >= 50 ? interval : 5000,
    log: (e) => process.stderr.write(JSON.stringify({ at: new Date().toISOString(), ...e }) + '\n'),
    signal: controller.signal,
  });
  return outcome === 'revoked' ? 3 : 0;
}
