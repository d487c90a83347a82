import fs from 'node:fs';
import path from 'node:path';
import { stopSharedRgw } from './rgw';

export default async function globalTeardown(): Promise<void> {
  const pg = (globalThis as { __TEST_PG__?: { stop(): Promise<void>; dir: string } }).__TEST_PG__;
  if (!pg) return;
  await stopSharedRgw(path.join(pg.dir, 'run'));
  await pg.stop().catch(() => undefined);
  fs.rmSync(pg.dir, { recursive: true, force: true });
}
