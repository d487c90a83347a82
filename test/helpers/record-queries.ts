import type { Database } from '../../src/infra/prisma';

/** A query a pool client sent: its text, its values, and its name when it is a named (prepared) statement. */
export interface SentQuery {
  text: string;
  values: unknown[];
  name?: string;
}

/** Hands every query the clients of `db`'s pool send (what the repositories send) to `onQuery`. */
export function recordQueries(db: Database, onQuery: (q: SentQuery) => void): void {
  db.pool.on('connect', (client) => {
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
      const [first, second] = args;
      if (typeof first === 'string') onQuery({ text: first, values: Array.isArray(second) ? second : [] });
      else if (first && typeof first === 'object' && 'text' in first) {
        const cfg = first as { text: string; values?: unknown[]; name?: string };
        onQuery({ text: cfg.text, values: cfg.values ?? [], name: cfg.name });
      }
      return query(...args);
    };
  });
}
