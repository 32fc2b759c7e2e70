/**
 * The typed operations and output redaction shared by the server and the connector: fixed argv
 * with validated values only, and output stripped of secrets, addresses and keys before storage.
 */
import { describe, expect, it } from 'vitest';
import { checkTypedOperation, commandLine } from '../../src/domain/remote/typed-ops.js';
import { redactOutput } from '../../src/domain/remote/redact.js';

describe('typed operations', () => {
  it('builds one fixed, quoted command from validated parameters', () => {
    const r = checkTypedOperation('journal.tail', { unit: 'nginx.service', lines: 50 });
    expect(r.ok).toBe(true);
    if (r.ok) expect(commandLine(r.op, r.params)).toBe("'journalctl' '--no-pager' '-o' 'short-iso' '-n' '50' '-u' 'nginx.service'");
  });

  it.each([
    ['host.disk_usage', { args: '-h' }, 'command_text_rejected'],
    ['service.status', { unit: '$(reboot).service' }, 'command_text_rejected'],
    ['service.status', { unit: '-x.service' }, 'invalid_service_unit'],
    ['service.status', { unit: 'nginx' }, 'invalid_service_unit'],
    ['journal.tail', { unit: 'a.service', lines: 5000 }, 'invalid_parameter_value'],
    ['journal.tail', { unit: 'a.service' }, 'missing_parameter'],
    ['host.uptime', { verbose: true }, 'unknown_parameter'],
    ['host.uptime\n', {}, 'control_characters'],
    ['Host.Uptime', {}, 'invalid_operation'],
  ])('refuses %s %j with %s', (id, params, code) => {
    const r = checkTypedOperation(id, params);
    expect(r.ok ? null : r.problem.code).toBe(code);
  });
});

describe('output redaction', () => {
  it('removes secrets, addresses and keys but keeps the evidence', () => {
    const raw = [
      'Filesystem 1024-blocks Used Available Capacity Mounted on',
      '/dev/sda1 41152736 9876543 29163680 26% /',
      'peer 192.168.1.20:5432 fe80::1ff:fe23:4567:890a db.internal',
      'password=hunter2 token: abc.def AKIAABCDEFGHIJKLMNOP',
      '-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----',
      'host key SHA256:Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFy',
      ' 02:09:48 up 5 days,  3:02,  load average: 0.10',
    ].join('\n');
    const r = redactOutput(raw, 65_536);
    for (const gone of ['192.168.1.20', 'fe80::1ff', 'db.internal', 'hunter2', 'AKIAABCDEFGHIJKLMNOP', 'b3BlbnNzaC1rZXktdjEAAAAA', 'Zm9vYmFyYmF6']) expect(r.text).not.toContain(gone);
    for (const kept of ['/dev/sda1', '26% /', '02:09:48 up 5 days', 'load average: 0.10']) expect(r.text).toContain(kept);
  });

  it('cuts to the limit and says so', () => {
    const r = redactOutput('x'.repeat(70_000), 65_536);
    expect(r).toMatchObject({ truncated: true });
    expect(r.text.length).toBe(65_536);
    expect(redactOutput('x'.repeat(70_000), 1000).text.length).toBe(1000);
  });
});

describe('output redaction on hostile output', () => {
  it('stays linear on long runs that look like the start of an address, email or host name', () => {
    for (const chunk of ['x', 'a-', 'a.', '1.', 'a:', 'ab@']) {
      const r = redactOutput(chunk.repeat(200_000 / chunk.length), 65_536);
      expect(r.truncated).toBe(true);
    }
  });
});
