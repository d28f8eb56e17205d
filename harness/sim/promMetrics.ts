// A minimal Prometheus text-format registry (counters, gauges, histograms) for /metrics, so the
// harness scrapes the simulated engine exactly as it scrapes vLLM. Too small to warrant prom-client.

type Labels = Record<string, string>;

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n')}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
}

function num(v: number): string {
  if (v === Infinity) return '+Inf';
  return Number.isInteger(v) ? `${v}.0` : String(v);
}

interface Metric {
  render(): string;
}

// A monotonically increasing count, optionally split by one extra label.
export class Counter implements Metric {
  private values = new Map<string, { labels: Labels; value: number }>();
  constructor(readonly name: string, readonly help: string, private readonly base: Labels) {}
  inc(by = 1, extra: Labels = {}): void {
    const labels = { ...this.base, ...extra };
    const key = labelText(labels);
    const cur = this.values.get(key) ?? { labels, value: 0 };
    cur.value += by;
    this.values.set(key, cur);
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} counter`];
    if (this.values.size === 0) lines.push(`${this.name}${labelText(this.base)} 0.0`);
    for (const { labels, value } of this.values.values()) lines.push(`${this.name}${labelText(labels)} ${num(value)}`);
    return lines.join('\n');
  }
}

// A value read at scrape time.
export class Gauge implements Metric {
  constructor(readonly name: string, readonly help: string, private readonly base: Labels, private readonly read: () => number) {}
  render(): string {
    return [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} gauge`, `${this.name}${labelText(this.base)} ${num(this.read())}`].join('\n');
  }
}

// Cumulative buckets, sum and count, as prometheus_client writes them.
export class Histogram implements Metric {
  private counts: number[];
  private sum = 0;
  private count = 0;
  constructor(readonly name: string, readonly help: string, private readonly base: Labels, private readonly bounds: number[]) {
    this.counts = new Array(bounds.length).fill(0);
  }
  observe(v: number): void {
    this.sum += v;
    this.count += 1;
    for (let i = 0; i < this.bounds.length; i++) if (v <= this.bounds[i]) this.counts[i] += 1;
  }
  render(): string {
    const lines = [`# HELP ${this.name} ${this.help}`, `# TYPE ${this.name} histogram`];
    this.bounds.forEach((b, i) => lines.push(`${this.name}_bucket${labelText({ ...this.base, le: num(b) })} ${num(this.counts[i])}`));
    lines.push(`${this.name}_bucket${labelText({ ...this.base, le: '+Inf' })} ${num(this.count)}`);
    lines.push(`${this.name}_count${labelText(this.base)} ${num(this.count)}`);
    lines.push(`${this.name}_sum${labelText(this.base)} ${num(this.sum)}`);
    return lines.join('\n');
  }
}

// Holds the metrics in exposition order.
export class Registry {
  private metrics: Metric[] = [];
  add<M extends Metric>(m: M): M {
    this.metrics.push(m);
    return m;
  }
  render(): string {
    return this.metrics.map((m) => m.render()).join('\n') + '\n';
  }
}
