/** A parsed Prometheus text exposition: samples and the `# TYPE` of each metric family. */
export interface Exposition {
  samples: { name: string; labels: Record<string, string>; value: number }[];
  types: Map<string, string>;
}

export function parseExposition(text: string): Exposition {
  const samples: Exposition['samples'] = [];
  const types = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line.startsWith('# TYPE ')) {
      const [name, type] = line.slice(7).split(' ');
      types.set(name!, type!);
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) throw new Error(`not an exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[l[1]!] = l[2]!.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { samples, types };
}

/** Samples of `name` whose labels include `labels`. */
export function samplesOf(e: Exposition, name: string, labels: Record<string, string> = {}): Exposition['samples'] {
  return e.samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
}

/** The value of the one sample of `name` with exactly these labels (plus `le` excluded), or undefined. */
export function valueOf(e: Exposition, name: string, labels: Record<string, string> = {}): number | undefined {
  const found = e.samples.filter(
    (s) =>
      s.name === name &&
      Object.keys(s.labels).length === Object.keys(labels).length &&
      Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

/**
 * Every series name a query may use: sample names, family names, and a histogram's or summary's _bucket/_sum/_count.
 */
export function exposedNames(e: Exposition): Set<string> {
  const names = new Set(e.samples.map((s) => s.name));
  for (const [name, type] of e.types) {
    names.add(name);
    if (type === 'histogram') for (const s of ['_bucket', '_sum', '_count']) names.add(name + s);
    if (type === 'summary') for (const s of ['_sum', '_count']) names.add(name + s);
  }
  return names;
}
