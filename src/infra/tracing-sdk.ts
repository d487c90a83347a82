import type { IncomingMessage } from 'node:http';
import {
  context,
  propagation,
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  trace,
  type Attributes,
  type Link,
  type Span,
} from '@opentelemetry/api';
import { registerInstrumentations } from '@opentelemetry/instrumentation';
import { AwsInstrumentation } from '@opentelemetry/instrumentation-aws-sdk';
import { ExpressInstrumentation, ExpressLayerType } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import {
  defaultResource,
  detectResources,
  envDetector,
  hostDetector,
  processDetector,
  resourceFromAttributes,
} from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ConsoleSpanExporter,
  NodeTracerProvider,
  SimpleSpanProcessor,
  type SpanExporter,
  type SpanProcessor,
} from '@opentelemetry/sdk-trace-node';
import type { TracingConfig } from '../config';
import type { TraceCarrier, Tracing } from './tracing.types';

/** Probes and scrapes: a span each, every few seconds, would drown the requests worth looking at. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/**
 * The OpenTelemetry SDK, loaded by startTracing only when tracing is on: a tracer provider with W3C trace context
 * propagation (`traceparent` in and out), the OTLP (or console) exporter behind a batch processor, and the official
 * instrumentations. The SDK reads the remaining standard variables itself (headers, timeouts, OTEL_BSP_*, sampler).
 */
export async function startTracingSdk(config: TracingConfig): Promise<Tracing> {
  // First of all, so that every module they patch (http included: the exporter loads it) is patched as it loads.
  // Their tracer is the global proxy, which reaches the provider registered below.
  registerInstrumentations({
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req: IncomingMessage) => UNTRACED_PATHS.has((req.url ?? '').split('?')[0]!),
      }),
      // Only the route's handler: a span per middleware and router of every request would cost more than it tells (the
      // HTTP span is named by the route all the same).
      new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE, ExpressLayerType.ROUTER] }),
      // Statements outside a request or job (the queue's polling, every second per queue) would each be a trace;
      // a connect span per checkout doubles the spans of a request (pool waits show in /metrics).
      new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true }),
      new UndiciInstrumentation(),
      new AwsInstrumentation(),
    ],
  });
  const processors: SpanProcessor[] = [];
  for (const name of config.exporters) {
    if (name === 'console') processors.push(new SimpleSpanProcessor(new ConsoleSpanExporter()));
    else processors.push(new BatchSpanProcessor(await otlpExporter(config)));
  }
  const resource = defaultResource()
    .merge(detectResources({ detectors: [envDetector, processDetector, hostDetector] }))
    .merge(resourceFromAttributes({ 'service.name': config.serviceName }));
  const provider = new NodeTracerProvider({ resource, spanProcessors: processors });
  // The global provider, AsyncLocalStorage context and W3C propagator (`traceparent` and `tracestate`).
  provider.register();
  const tracer = trace.getTracer('asset-service');

  const fail = (span: Span, err: unknown): void => {
    const e = err instanceof Error ? err : new Error(String(err));
    span.recordException(e);
    span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
  };
  const inSpan = async <T>(span: Span, fn: () => Promise<T>): Promise<T> => {
    try {
      return await fn();
    } catch (err) {
      fail(span, err);
      throw err;
    } finally {
      span.end();
    }
  };
  const jobAttributes = (job: string, operation: 'send' | 'process', count: number): Attributes => ({
    'messaging.system': 'pg-boss',
    'messaging.operation.type': operation,
    'messaging.destination.name': job,
    ...(count > 1 ? { 'messaging.batch.message_count': count } : {}),
  });

  return {
    tracer,
    fail,
    enqueue: (job, send) => {
      // A job sent outside any trace (at start, on a schedule) starts none: its worker's span is then a root.
      if (!trace.getSpan(context.active())) return send(undefined);
      return tracer.startActiveSpan(
        `send ${job}`,
        { kind: SpanKind.PRODUCER, attributes: jobAttributes(job, 'send', 1) },
        (span) => {
          const carrier: Partial<TraceCarrier> = {};
          propagation.inject(context.active(), carrier);
          return inSpan(span, () => send(carrier.traceparent ? (carrier as TraceCarrier) : undefined));
        },
      );
    },
    work: (job, jobs, fn) => {
      const links: Link[] = [];
      let parent = ROOT_CONTEXT;
      for (const j of jobs) {
        if (!j.carrier) continue;
        const ctx = propagation.extract(ROOT_CONTEXT, j.carrier);
        const sc = trace.getSpanContext(ctx);
        if (!sc) continue;
        if (parent === ROOT_CONTEXT) parent = ctx;
        links.push({ context: sc, attributes: { 'messaging.message.id': j.id } });
      }
      const attributes: Attributes = {
        ...jobAttributes(job, 'process', jobs.length),
        ...(jobs.length === 1 ? { 'messaging.message.id': jobs[0]!.id } : {}),
      };
      return tracer.startActiveSpan(`process ${job}`, { kind: SpanKind.CONSUMER, attributes, links }, parent, (span) =>
        inSpan(span, fn),
      );
    },
    shutdown: () => provider.shutdown(),
  };
}

/** The OTLP/HTTP exporter of the configured encoding; only that one is loaded. */
async function otlpExporter(config: TracingConfig): Promise<SpanExporter> {
  const options = config.otlpUrl ? { url: config.otlpUrl } : {};
  if (config.protocol === 'http/json') {
    const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-http');
    return new OTLPTraceExporter(options);
  }
  const { OTLPTraceExporter } = await import('@opentelemetry/exporter-trace-otlp-proto');
  return new OTLPTraceExporter(options);
}
