import type { TracingConfig } from '../config';
import type { Tracing } from './tracing.types';

export type { TraceCarrier, Tracing } from './tracing.types';

/**
 * Starts tracing when `config` says it is on (src/config.ts, from the standard OTEL_* variables). Must run before the
 * modules it instruments (http, express, pg, the AWS SDK) are first required: the instrumentations patch a module as
 * it is loaded. Off, it loads nothing: the SDK, its exporters and instrumentations stay out of the process.
 */
export async function startTracing(config: TracingConfig | undefined): Promise<Tracing | undefined> {
  if (!config) return undefined;
  const { startTracingSdk } = require('./tracing-sdk') as typeof import('./tracing-sdk');
  return startTracingSdk(config);
}
