import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

/** The built `assets` client (dist/, `npm run build`). */
export const CLI_MAIN = path.join(__dirname, '..', '..', 'dist', 'src', 'cli', 'assets', 'main.js');

export interface CliRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface CliChild {
  proc: ChildProcess;
  stdout(): string;
  stderr(): string;
  done: Promise<CliRun>;
}

/** Starts `node dist/src/cli/assets/main.js ...args` with only the given environment (plus PATH). */
export function startCli(args: string[], env: Record<string, string>): CliChild {
  const proc = spawn(process.execPath, [CLI_MAIN, ...args], {
    env: { PATH: process.env.PATH ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const done = new Promise<CliRun>((resolve) =>
    proc.on('close', (code) => resolve({ code, stdout: out, stderr: err })),
  );
  return { proc, stdout: () => out, stderr: () => err, done };
}

export const runCli = (args: string[], env: Record<string, string>): Promise<CliRun> => startCli(args, env).done;
