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
 * A Prometheus histogram registered in a prom-client registry (which writes the exposition) but observed without
 * prom-client's per-call work: `Histogram.observe` builds and validates a label object and joins it into a string key
 * on every call (`npm run bench -- metadata` and `graphql` show it), where the subclasses find their series by a few
 * map lookups on values the caller already holds and one bucket search. Series are written in first-observed order.
 */
abstract class KeptHistogram {
  private readonly series: Series[] = [];

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
      reset: () => {
        this.series.length = 0;
        this.forget();
      },
    };
    registry.registerMetric(metric as unknown as Metric<string>);
  }

  /** Drops the subclass's index of its series (a registry reset). */
  protected abstract forget(): void;

  protected newSeries(labels: Record<string, string>): Series {
    const s = { labels, counts: new Float64Array(this.bounds.length + 1), sum: 0, count: 0 };
    this.series.push(s);
    return s;
  }

  protected record(s: Series, seconds: number): void {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && seconds > b[i]!) i++;
    s.counts[i]!++;
    s.sum += seconds;
    s.count++;
  }

  private samples(): Sample[] {
    const values: Sample[] = [];
    for (const s of this.series) {
      let acc = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        acc += s.counts[i]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le: this.bounds[i]! }, value: acc });
      }
      values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le: '+Inf' }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
    }
    return values;
  }
}

/** HTTP requests by method, route template (a constant string per route) and status. */
export class RequestHistogram extends KeptHistogram {
  private readonly byRoute = new Map<string, Map<number | string, Map<string, Series>>>();

  observe(method: string, route: string, status: number | string, seconds: number): void {
    let byStatus = this.byRoute.get(route);
    if (byStatus === undefined) this.byRoute.set(route, (byStatus = new Map()));
    let byMethod = byStatus.get(status);
    if (byMethod === undefined) byStatus.set(status, (byMethod = new Map()));
    let s = byMethod.get(method);
    if (s === undefined) byMethod.set(method, (s = this.newSeries({ method, route, status: String(status) })));
    this.record(s, seconds);
  }

  protected forget(): void {
    this.byRoute.clear();
  }
}

/** GraphQL operations by operation label (a bounded set: Metrics caps it) and outcome. */
export class OperationHistogram extends KeptHistogram {
  private readonly byOperation = new Map<string, { ok?: Series; error?: Series }>();

  observe(operation: string, ok: boolean, seconds: number): void {
    let byOutcome = this.byOperation.get(operation);
    if (byOutcome === undefined) this.byOperation.set(operation, (byOutcome = {}));
    const s = ok
      ? (byOutcome.ok ??= this.newSeries({ operation, outcome: 'ok' }))
      : (byOutcome.error ??= this.newSeries({ operation, outcome: 'error' }));
    this.record(s, seconds);
  }

  protected forget(): void {
    this.byOperation.clear();
  }
}
