/** Running the CLI in tests: in-process (runCommands with captured io) or as a real child process. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Readable } from 'node:stream';
import { runCommands, type CliOptions } from '../../src/cli/commands.js';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export const BIN = fileURLToPath(new URL('../../bin/sightline.mjs', import.meta.url));
export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** runCommands with captured stdout/stderr, the given env and stdin text; no stored login. */
export async function runInProcess(
  argv: string[],
  env: Record<string, string | undefined>,
  opts: Omit<CliOptions, 'io'> & { stdin?: string; columns?: number; tty?: boolean } = {},
): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const { stdin, columns, tty, ...rest } = opts;
  const code = await runCommands(argv, {
    loadStoredToken: async () => null,
    ...rest,
    io: {
      stdout: { write: (s: string) => (stdout += s), columns, isTTY: tty },
      stderr: { write: (s: string) => (stderr += s), isTTY: tty },
      stdin: Readable.from(stdin === undefined ? [] : [stdin]),
      env,
    },
  });
  return { code, stdout, stderr };
}

/** `node bin/sightline.mjs ...argv` as a child process. HOME points at an empty dir so no stored login leaks in. */
export function runBin(argv: string[], env: Record<string, string | undefined>, stdin?: string): Promise<CliRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...argv], {
      cwd: ROOT,
      env: { PATH: process.env.PATH, HOME: env.HOME ?? '/nonexistent-home', ...env },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(stdin ?? '');
  });
}
