/**
 * The Node.js this package runs on (package.json `engines`): ES modules loaded with require() (pg-boss) and
 * `ArrayBuffer.prototype.transfer` (the ingest worker) came in 22.12. An older Node (a system Node 20 running
 * `node dist/src/main.js` by hand) would start and then answer 500 to every upload: stop at once instead, saying why.
 * `npm start`, `npm test` and `npx assets` use the Node of the `node` devDependency (24), found first on npm's PATH.
 */
export const MIN_NODE = [22, 12] as const;

/** Undefined when `version` (as `process.versions.node`) is new enough; else the message to print. */
export function nodeTooOld(version: string, program: string): string | undefined {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (major > MIN_NODE[0] || (major === MIN_NODE[0] && minor >= MIN_NODE[1])) return undefined;
  return (
    `${program} needs Node.js ${MIN_NODE.join('.')} or newer; this is Node.js ${version}. ` +
    'Run it through npm (`npm start`, `npx assets`), which uses the Node.js 24 the package installs, or put that first on PATH.\n'
  );
}

/** Exits with status 1 (the message on stderr) when this process's Node.js is too old. */
export function requireSupportedNode(program: string): void {
  const problem = nodeTooOld(process.versions.node, program);
  if (problem === undefined) return;
  process.stderr.write(problem);
  process.exit(1);
}
