import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(__dirname, '..', '..');
const flagsOf = (args: string[]) => args.filter((a) => a.startsWith('--') && !a.startsWith('--role'));

/**
 * The service's node flags (V8's heap bounds: docs/operations.md, "Memory") are part of how it is started: npm's
 * start script, the image's entry point and the benchmarks (bench/lib/common.cjs) all start it with the same ones.
 */
describe("the service's start path", () => {
  const script = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')).scripts['start:built'] as string;
  const flags = flagsOf(script.split(/\s+/));

  test('bounds both generations of the V8 heap', () => {
    expect(flags).toEqual([
      expect.stringMatching(/^--max-semi-space-size=\d+$/),
      expect.stringMatching(/^--max-old-space-size=\d+$/),
    ]);
  });

  test("the image's entry point starts the service with the same flags", () => {
    const entry = /^ENTRYPOINT (\[.*\])$/m.exec(fs.readFileSync(path.join(root, 'Dockerfile'), 'utf8'));
    expect(entry).not.toBeNull();
    const args = JSON.parse(entry![1]!) as string[];
    expect(args[0]).toBe('node');
    expect(args.at(-1)).toBe('dist/src/main.js');
    expect(flagsOf(args)).toEqual(flags);
  });

  test('the benchmarks start every build with them', () => {
    const { SERVICE_NODE_FLAGS } = require('../../bench/lib/common.cjs') as { SERVICE_NODE_FLAGS: string[] };
    if (process.env.BENCH_NODE_FLAGS === undefined) expect(SERVICE_NODE_FLAGS).toEqual(flags);
  });
});
