import { loadConfig } from '../../src/config';

// Tracing is decided by the standard OpenTelemetry variables alone: off unless an OTLP endpoint is set or
// OTEL_TRACES_EXPORTER names an exporter; OTEL_SDK_DISABLED=true and OTEL_TRACES_EXPORTER=none turn it off.

const tracing = (env: Record<string, string>) => loadConfig(env).tracing;

test('off by default, and off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none', () => {
  expect(tracing({})).toBeUndefined();
  expect(tracing({ OTEL_SERVICE_NAME: 'x', OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json' })).toBeUndefined();
  expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
  expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
  // A protocol this service cannot speak is no problem while tracing is off.
  expect(tracing({ OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toBeUndefined();
});

test('an endpoint turns OTLP on: /v1/traces below OTEL_EXPORTER_OTLP_ENDPOINT, the traces endpoint as given', () => {
  expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' })).toEqual({
    serviceName: 'asset-service',
    exporters: ['otlp'],
    protocol: 'http/protobuf',
    otlpUrl: 'http://collector:4318/v1/traces',
  });
  expect(tracing({ OTEL_EXPORTER_OTLP_ENDPOINT: 'https://c.example/otlp/' })?.otlpUrl).toBe(
    'https://c.example/otlp/v1/traces',
  );
  expect(
    tracing({
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318',
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:9999/custom',
    })?.otlpUrl,
  ).toBe('http://b:9999/custom');
  expect(tracing({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:9999/custom' })?.otlpUrl).toBe('http://b:9999/custom');
});

test('OTEL_TRACES_EXPORTER, OTEL_SERVICE_NAME and the protocol (the traces one first)', () => {
  expect(tracing({ OTEL_TRACES_EXPORTER: 'console' })).toEqual({
    serviceName: 'asset-service',
    exporters: ['console'],
    protocol: 'http/protobuf',
    otlpUrl: undefined,
  });
  expect(
    tracing({
      OTEL_TRACES_EXPORTER: 'otlp, console',
      OTEL_SERVICE_NAME: 'assets-eu',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/json',
    }),
  ).toMatchObject({ serviceName: 'assets-eu', exporters: ['otlp', 'console'], protocol: 'http/json' });
});

test('bad values are listed with their variable', () => {
  const bad = (env: Record<string, string>) => () => loadConfig(env);
  expect(bad({ OTEL_TRACES_EXPORTER: 'zipkin' })).toThrow(/OTEL_TRACES_EXPORTER: zipkin/);
  expect(bad({ OTEL_TRACES_EXPORTER: 'none,otlp' })).toThrow(/none cannot be named beside/);
  expect(bad({ OTEL_EXPORTER_OTLP_ENDPOINT: 'ftp://c' })).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT="ftp:\/\/c"/);
  expect(bad({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' })).toThrow(
    /OTEL_EXPORTER_OTLP_PROTOCOL="grpc": expected http\/protobuf or http\/json/,
  );
  expect(bad({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c', OTEL_SDK_DISABLED: 'maybe' })).toThrow(/OTEL_SDK_DISABLED/);
});
