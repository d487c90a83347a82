import type { Metric, Registry } from 'prom-client';

/** One line of the exposition, as prom-client's registry reads it from a metric's `get()`. */
interface Sample {
  metricName: string;
  labels: Record<string, string | number>;
  value: number;
}

interface Series {
  labels: Record<string, string>;
  /** Observations per bucket (not cumulative); the last slot is above the highest bound. */
  counts: Float64Array;
  sum: number;
  count: number;
}

/**
 * A Prometheus histogram of HTTP requests by method, route template and status, registered in a prom-client registry
 * (which writes the exposition) but observed without prom-client's per-call work: `Histogram.observe` builds and
 * validates a label object and joins it into a string key on every call (~0.9 µs here, about 1 % of a
 * `GET /api/assets/{id}`'s CPU), where this does three map lookups on values the caller already holds (the route
 * template is a constant string per route) and one bucket search.
 */
export class RequestHistogram {
  private readonly byRoute = new Map<string, Map<number | string, Map<string, Series>>>();

  constructor(
    readonly name: string,
    help: string,
    private readonly bounds: readonly number[],
    registry: Registry,
  ) {
    const metric = {
      name,
      help,
      type: 'histogram',
      aggregator: 'sum',
      get: () => ({ name, help, type: 'histogram', aggregator: 'sum', values: this.samples() }),
      reset: () => this.byRoute.clear(),
    };
    registry.registerMetric(metric as unknown as Metric<string>);
  }

  observe(method: string, route: string, status: number | string, seconds: number): void {
    let byStatus = this.byRoute.get(route);
    if (byStatus === undefined) this.byRoute.set(route, (byStatus = new Map()));
    let byMethod = byStatus.get(status);
    if (byMethod === undefined) byStatus.set(status, (byMethod = new Map()));
    let s = byMethod.get(method);
    if (s === undefined) {
      s = { labels: { method, route, status: String(status) }, counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 };
      byMethod.set(method, s);
    }
    const b = this.bounds;
    let i = 0;
    while (i < b.length && seconds > b[i]!) i++;
    s.counts[i]!++;
    s.sum += seconds;
    s.count++;
  }

  private samples(): Sample[] {
    const values: Sample[] = [];
    for (const byStatus of this.byRoute.values()) {
      for (const byMethod of byStatus.values()) {
        for (const s of byMethod.values()) {
          let acc = 0;
          for (let i = 0; i < this.bounds.length; i++) {
            acc += s.counts[i]!;
            values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le: this.bounds[i]! }, value: acc });
          }
          values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le: '+Inf' }, value: s.count });
          values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
          values.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
        }
      }
    }
    return values;
  }
}
