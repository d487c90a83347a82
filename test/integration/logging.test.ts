import { spawn } from 'node:child_process';
import path from 'node:path';

/** The built logger (dist/, built by `npm test`), in a process of its own: what reaches stdout as it exits. */
const LOGGER = path.join(__dirname, '..', '..', 'dist', 'src', 'infra', 'logger.js');

async function run(script: string): Promise<{ code: number | null; lines: Record<string, unknown>[]; stderr: string }> {
  const child = spawn(
    process.execPath,
    ['-e', `const { createLogger } = require(${JSON.stringify(LOGGER)});\n${script}`],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  const lines = out
    .split('\n')
    .filter((l) => l.length > 0)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
  return { code, lines, stderr: err };
}

const MANY = 5000;
const logMany = `const logger = createLogger('info', { service: 'asset-service' });
for (let i = 0; i < ${MANY}; i++) logger.info('line', { i, pad: 'x'.repeat(200) });`;

test('a crash (an uncaught exception) right after many lines: every line reaches stdout, whole', async () => {
  const { code, lines, stderr } = await run(`${logMany}\nthrow new Error('crash after logging');`);
  expect(code).toBe(1);
  expect(stderr).toContain('crash after logging');
  expect(lines).toHaveLength(MANY);
  expect(new Set(lines.map((l) => l.i)).size).toBe(MANY);
});

test('process.exit right after many lines: every line reaches stdout', async () => {
  const { code, lines } = await run(`${logMany}\nprocess.exit(3);`);
  expect(code).toBe(3);
  expect(lines).toHaveLength(MANY);
});

test('a shutdown that awaits flush() before exiting: every line, in order, the last one last', async () => {
  const { code, lines } = await run(
    `${logMany}\nlogger.flush().then(() => { logger.info('stopped'); return logger.flush(); }).then(() => process.exit(0));`,
  );
  expect(code).toBe(0);
  expect(lines).toHaveLength(MANY + 1);
  expect(lines.slice(0, MANY).map((l) => l.i)).toEqual(Array.from({ length: MANY }, (_, i) => i));
  expect(lines[MANY]).toMatchObject({ level: 'info', msg: 'stopped', service: 'asset-service' });
});
