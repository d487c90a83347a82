import type { LogLevel } from '../config';

/** Structured JSON logs, one object per line on stdout, at the level LOG_LEVEL names. */
export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
  child(fields: Record<string, unknown>): Logger;
}

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40, silent: 100 };

export function createLogger(
  level: LogLevel,
  base: Record<string, unknown> = {},
  out: (line: string) => void = (l) => process.stdout.write(l),
): Logger {
  const min = RANK[level];
  const emit = (lvl: Exclude<LogLevel, 'silent'>, msg: string, fields?: Record<string, unknown>) => {
    if (RANK[lvl] < min) return;
    const record: Record<string, unknown> = { time: new Date().toISOString(), level: lvl, msg, ...base, ...fields };
    for (const [k, v] of Object.entries(record)) {
      if (v instanceof Error)
        record[k] = { name: v.name, message: v.message, stack: v.stack, code: (v as { code?: unknown }).code };
      else if (typeof v === 'bigint') record[k] = v.toString();
    }
    out(JSON.stringify(record) + '\n');
  };
  return {
    debug: (m, f) => emit('debug', m, f),
    info: (m, f) => emit('info', m, f),
    warn: (m, f) => emit('warn', m, f),
    error: (m, f) => emit('error', m, f),
    child: (fields) => createLogger(level, { ...base, ...fields }, out),
  };
}
