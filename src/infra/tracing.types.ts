import type { Span, Tracer } from '@opentelemetry/api';

/** The W3C trace context of a span, as the `traceparent` and `tracestate` headers would carry it. */
export interface TraceCarrier {
  traceparent: string;
  tracestate?: string;
}

/**
 * What the service uses of OpenTelemetry once tracing is on (made by tracing-sdk.ts). With tracing off there is no
 * such object (undefined in the container), so no caller pays for a span, a context lookup or an import.
 */
export interface Tracing {
  readonly tracer: Tracer;
  /**
   * Runs `send` in a producer span of `job` and gives it that span's context as headers, to travel in the job's data:
   * the worker that takes the job continues the same trace (`work`).
   */
  enqueue<T>(job: string, send: (carrier: TraceCarrier | undefined) => Promise<T>): Promise<T>;
  /**
   * Runs a job's work in a consumer span whose parent is the context its sender put in the data (the first of a
   * batch that has one); every job of a batch that has one is also a link, so each sender's trace leads to it.
   */
  work<T>(
    job: string,
    jobs: readonly { id: string; carrier: TraceCarrier | undefined }[],
    fn: () => Promise<T>,
  ): Promise<T>;
  /** Marks `span` failed with `err` (its status and an exception event). */
  fail(span: Span, err: unknown): void;
  /** Exports the spans still buffered, then stops (after the service has drained its requests and jobs). */
  shutdown(): Promise<void>;
}
