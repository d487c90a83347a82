/**
 * The route table of the express app, read from its router stack: what openapi.yaml must list, and what the
 * `Allow` of OPTIONS and 405 answers must name.
 */
import type { Express } from 'express';

/** One served endpoint: method + path in OpenAPI form (`{param}`). */
export interface Served {
  method: string;
  path: string;
}

/**
 * Every route of an express 5 app, found by walking its router stack: route layers carry `.route.path` and
 * `.route.methods`; router layers carry their mount path in `.rawPath` and their own `.handle.stack`. A plain
 * middleware mounted under a path other than `/` also answers requests, so it is reported as `USE`.
 */
export function servedRoutes(app: Express, exclude: (path: string) => boolean = () => false): Served[] {
  const out: Served[] = [];
  const join = (prefix: string, p: string) => (prefix + (p === '/' ? '' : p)).replace(/\/+/g, '/') || '/';
  const toOpenApi = (p: string) => {
    if (/[*?()[\]]|\{(?!\w+\})/.test(p.replace(/:\w+/g, '')))
      throw new Error(`cannot express the route path ${p} in OpenAPI`);
    return p.replace(/:(\w+)/g, '{$1}');
  };
  const walk = (stack: any[], prefix: string) => {
    for (const layer of stack) {
      const raw: unknown = layer.route ? layer.route.path : layer.rawPath;
      const paths = Array.isArray(raw) ? raw : [raw];
      for (const p of paths) {
        if (typeof p !== 'string') throw new Error(`a route or mount path that is not a string: ${String(p)}`);
        if (exclude(join(prefix, p))) continue;
        if (layer.route) {
          for (const [m, on] of Object.entries<boolean>(layer.route.methods)) {
            if (on) out.push({ method: m === '_all' ? 'ALL' : m.toUpperCase(), path: toOpenApi(join(prefix, p)) });
          }
        } else if (Array.isArray(layer.handle?.stack)) {
          walk(layer.handle.stack, join(prefix, p));
        } else if (p !== '/') {
          out.push({ method: 'USE', path: toOpenApi(join(prefix, p)) });
        }
      }
    }
  };
  walk((app as unknown as { router: { stack: unknown[] } }).router.stack, '');
  return out;
}

/**
 * The error codes of the pipeline steps each route passes, by `METHOD path` (OpenAPI form): the steps marked with
 * `raising` (src/http/shared/raises.ts) mounted before the route in its stack or an enclosing one, those of the
 * route's own handlers, and the app's error handlers. A path served by two registrations (a signed route and a keyed
 * one) has the codes of both.
 */
export function stepCodesOfRoutes(
  app: Express,
  exclude: (path: string) => boolean = () => false,
): Map<string, Set<string>> {
  const { codesRaisedBy } = require('../../src/http/shared/raises') as typeof import('../../src/http/shared/raises');
  const out = new Map<string, Set<string>>();
  const root = (app as unknown as { router: { stack: any[] } }).router.stack;
  const isErrorStep = (layer: any) => !layer.route && typeof layer.handle === 'function' && layer.handle.length === 4;
  const onError = root.filter(isErrorStep).flatMap((layer: any) => codesRaisedBy(layer.handle));
  const join = (prefix: string, p: string) => (prefix + (p === '/' ? '' : p)).replace(/\/+/g, '/') || '/';
  const walk = (stack: any[], prefix: string, inherited: readonly string[]) => {
    const before = [...inherited];
    for (const layer of stack) {
      const raw: unknown = layer.route ? layer.route.path : layer.rawPath;
      for (const p of Array.isArray(raw) ? raw : [raw]) {
        const full = join(prefix, p as string);
        if (exclude(full)) continue;
        if (layer.route) {
          const own = (layer.route.stack as any[]).flatMap((l) => codesRaisedBy(l.handle));
          for (const [m, on] of Object.entries<boolean>(layer.route.methods)) {
            if (!on) continue;
            const key = `${m.toUpperCase()} ${full.replace(/:(\w+)/g, '{$1}')}`;
            const codes = out.get(key) ?? new Set<string>();
            for (const c of [...before, ...own, ...onError]) codes.add(c);
            out.set(key, codes);
          }
        } else if (Array.isArray(layer.handle?.stack)) {
          walk(layer.handle.stack, full, before);
        } else if (!isErrorStep(layer) && (p === '/' || p === undefined)) {
          before.push(...codesRaisedBy(layer.handle));
        }
      }
    }
  };
  walk(root, '', []);
  return out;
}
