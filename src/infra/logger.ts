import pino from 'pino';
import type { LogLevel } from '../config';

/**
 * Structured JSON logs through pino, one object per line on stdout, at the level LOG_LEVEL names: `time` (ISO 8601),
 * `level` (its name), `msg`, then the logger's fields (a child's) and the line's own.
 */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

/** The process's logger: also writes out what it still holds (on shutdown, before the process exits). */
export interface RootLogger extends Logger {
  /** Settles once every line logged so far is written (or after a second, if stdout does not take them). */
  flush(): Promise<void>;
}

/** An Error as a log field: what a reader needs of it, the same on every line whatever its key. */
function errorFields(v: Error): Record<string, unknown> {
  return { name: v.name, message: v.message, stack: v.stack, code: (v as { code?: unknown }).code };
}

/** Error values become their fields and bigints their decimal text (JSON has neither). */
function plainFields(fields: Record<string, unknown>): Record<string, unknown> {
  let out = fields;
  for (const [k, v] of Object.entries(fields)) {
    if (!(v instanceof Error) && typeof v !== 'bigint') continue;
    if (out === fields) out = { ...fields };
    out[k] = v instanceof Error ? errorFields(v) : String(v);
  }
  return out;
}

/**
 * `out`: where lines go instead of stdout (tests collect them). Stdout is written asynchronously (one write at a
 * time, the lines logged meanwhile going out together in the next), not with a blocking write per line. Lines still
 * held when the process exits, on any path (process.exit, a crash), are written synchronously by pino's exit hook;
 * a graceful shutdown awaits `flush()` first, so they also keep their order.
 */
export function createLogger(
  level: LogLevel,
  base: Record<string, unknown> = {},
  out?: (line: string) => void,
): RootLogger {
  const stdout = out ? undefined : pino.destination({ dest: 1, sync: false });
  const root = pino(
    {
      level,
      base: plainFields(base),
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }), log: plainFields },
      // Not pino's own `err` serializer, which would reshape the fields above (as `type`, `message`, `stack`).
      serializers: { err: (v: unknown) => (v instanceof Error ? errorFields(v) : v) },
    },
    stdout ?? { write: out! },
  );
  return Object.assign(wrap(root), { flush: () => (stdout ? written(stdout, 1000) : Promise.resolve()) });
}

/** Settles when `stream` has written everything it holds: an empty write's drain comes after the writes before it. */
function written(stream: ReturnType<typeof pino.destination>, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      stream.off('drain', done);
      resolve();
    };
    const timer = setTimeout(done, timeoutMs);
    stream.once('drain', done);
    stream.write('');
  });
}

function wrap(p: pino.Logger): Logger {
  return {
    debug: (msg, fields) => (fields ? p.debug(fields, msg) : p.debug(msg)),
    info: (msg, fields) => (fields ? p.info(fields, msg) : p.info(msg)),
    warn: (msg, fields) => (fields ? p.warn(fields, msg) : p.warn(msg)),
    error: (msg, fields) => (fields ? p.error(fields, msg) : p.error(msg)),
    // pino formats a child's fields once, as they are: Errors and bigints are made plain here.
    child: (fields) => wrap(p.child(plainFields(fields))),
  };
}
