import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { gql } from '../helpers/graphql';
import { startTestService, type TestService } from '../helpers/harness';
import { exposedNames, parseExposition } from '../helpers/prometheus';

// deploy/: the Grafana dashboard and the alert rules only query metrics the service exposes, and the monitoring
// profile of docker-compose.yml provisions them.

const ROOT = path.resolve(__dirname, '../..');
const read = (p: string) => fs.readFileSync(path.join(ROOT, p), 'utf8');
const DASHBOARD = 'deploy/grafana/dashboards/asset-service.json';
const ALERTS = 'deploy/prometheus/alerts.yml';

/** PromQL functions, aggregations and keywords: words a query uses that are not metric names. */
const PROMQL_WORDS = new Set(
  'sum max min avg count rate irate increase histogram_quantile by without on ignoring group_left group_right offset bool and or unless label_values topk bottomk abs clamp_min clamp_max delta deriv'.split(
    ' ',
  ),
);

/** Metric names in a PromQL expression: selectors (`name{...}`, `name[...]`, bare names), not functions or labels. */
function metricNamesIn(expr: string): string[] {
  const names = new Set<string>();
  const withoutStrings = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
  // Label lists: inside {...} and after by/without/on/ignoring (...).
  const withoutLabels = withoutStrings
    .replace(/\{[^}]*\}/g, '{}')
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, '')
    .replace(/label_values\([^)]*\)/g, '');
  for (const m of withoutLabels.matchAll(/\b([a-zA-Z_:][\w:]*)\b(\s*\()?/g)) {
    const [, word, call] = m;
    if (call || PROMQL_WORDS.has(word!) || /^\d/.test(word!)) continue;
    if (/^\$/.test(word!) || word === '__rate_interval' || word === 'le') continue;
    names.add(word!);
  }
  // label_values(metric, label): the first argument is a metric.
  for (const m of withoutStrings.matchAll(/label_values\(\s*([a-zA-Z_:][\w:]*)/g)) names.add(m[1]!);
  return [...names];
}

function dashboardQueries(): string[] {
  const out: string[] = [];
  const walk = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (v && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if ((k === 'expr' || k === 'definition') && typeof x === 'string') out.push(x);
        else walk(x);
      }
    }
  };
  walk(JSON.parse(read(DASHBOARD)));
  return out;
}

describe('the dashboard', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startTestService();
  });
  afterAll(async () => {
    await svc?.stop();
  });

  test('queries only metrics the service exposes', async () => {
    await (await svc.fetch('/api/assets')).arrayBuffer();
    await gql(svc, '{ assets(limit: 1) { total } }');
    const res = await fetch(svc.url + '/metrics');
    expect(res.status).toBe(200);
    const exposed = exposedNames(parseExposition(await res.text()));
    const queries = dashboardQueries();
    expect(queries.length).toBeGreaterThan(15);
    const used = new Set(queries.flatMap(metricNamesIn));
    expect(used.size).toBeGreaterThan(10);
    expect([...used].filter((n) => !exposed.has(n)).sort()).toEqual([]);
    // The parser finds what it should (and so cannot pass by finding nothing).
    expect(
      metricNamesIn(
        'histogram_quantile(0.99, sum by (le, route) (rate(a_b_bucket{instance=~"$instance", x="y{z}"}[$__rate_interval])))',
      ),
    ).toEqual(['a_b_bucket']);
  });

  test('alert rules: valid for promtool, on metrics the service exposes, loaded by the provisioned Prometheus', async () => {
    const check = spawnSync('promtool', ['check', 'rules', path.join(ROOT, ALERTS)], { encoding: 'utf8' });
    expect({ status: check.status, out: check.stdout + check.stderr }).toEqual({
      status: 0,
      out: expect.stringContaining('SUCCESS: 6 rules found'),
    });
    const rules = (
      YAML.parse(read(ALERTS)) as { groups: { rules: { alert: string; expr: string }[] }[] }
    ).groups.flatMap((g) => g.rules);
    const exposed = exposedNames(parseExposition(await (await fetch(svc.url + '/metrics')).text()));
    // `up` is Prometheus's own series of each scrape target.
    const missing = rules.flatMap((r) => metricNamesIn(r.expr).filter((n) => n !== 'up' && !exposed.has(n)));
    expect(missing).toEqual([]);
    for (const signal of ['Down', 'DatabaseDown', 'ErrorRate', 'Slow', 'Queue', 'Storage'])
      expect(rules.map((r) => r.alert).some((a) => a.includes(signal))).toBe(true);
    const prom = YAML.parse(read('deploy/prometheus.yml')) as { rule_files: string[] };
    const compose = YAML.parse(read('docker-compose.yml'));
    expect(compose.services.prometheus.volumes).toContain(`./${ALERTS}:${prom.rule_files[0]}:ro`);
  });

  test('is provisioned against the provisioned Prometheus data source', () => {
    const dashboard = JSON.parse(read(DASHBOARD)) as { uid: string; panels: { datasource?: { uid: string } }[] };
    const sources = YAML.parse(read('deploy/grafana/provisioning/datasources/prometheus.yml')) as {
      datasources: { uid: string; url: string }[];
    };
    const uids = new Set(sources.datasources.map((d) => d.uid));
    for (const p of dashboard.panels) if (p.datasource) expect(uids.has(p.datasource.uid)).toBe(true);
    expect(sources.datasources[0]!.url).toBe('http://prometheus:9090');
    const providers = YAML.parse(read('deploy/grafana/provisioning/dashboards/asset-service.yml')) as {
      providers: { options: { path: string } }[];
    };
    const compose = YAML.parse(read('docker-compose.yml'));
    const grafanaMounts: string[] = compose.services.grafana.volumes;
    expect(grafanaMounts).toContain(`./deploy/grafana/dashboards:${providers.providers[0]!.options.path}:ro`);
    expect(grafanaMounts).toContain('./deploy/grafana/provisioning:/etc/grafana/provisioning:ro');
  });
});

describe('docker-compose.yml', () => {
  const compose = YAML.parse(read('docker-compose.yml'));

  test('Prometheus and Grafana under profile monitoring, with files that exist', () => {
    for (const name of ['prometheus', 'grafana']) {
      const s = compose.services[name];
      expect(s.profiles).toEqual(['monitoring']);
      for (const v of s.volumes as string[]) {
        const [src] = v.split(':');
        if (src!.startsWith('./')) expect(fs.existsSync(path.join(ROOT, src!))).toBe(true);
      }
    }
    // Prometheus sends the token the replicas take.
    const prom = YAML.parse(read('deploy/prometheus.yml'));
    const job = prom.scrape_configs[0];
    expect(job.metrics_path).toBe('/metrics');
    expect(compose.services.prometheus.configs).toContainEqual({
      source: 'metrics_token',
      target: job.authorization.credentials_file,
    });
    expect(compose.configs.metrics_token.content).toBe(compose.services.assets.environment.METRICS_TOKEN);
    expect(job.dns_sd_configs[0].names).toEqual(['assets']);
  });

  test('`docker compose config` accepts it', () => {
    const version = spawnSync('docker', ['compose', 'version'], { encoding: 'utf8' });
    if (version.error || version.status !== 0) {
      console.log(
        `monitoring.test: \`docker compose\` is not available here (${version.error ? 'no docker binary' : (version.stderr || version.stdout).trim().split('\n')[0]}); ` +
          'the file was checked as YAML only',
      );
      return;
    }
    const res = spawnSync(
      'docker',
      ['compose', '-f', 'docker-compose.yml', '--profile', 'monitoring', 'config', '--quiet'],
      { cwd: ROOT, encoding: 'utf8' },
    );
    expect({ status: res.status, stderr: res.stderr }).toEqual({ status: 0, stderr: '' });
  });
});
