// Reads the few engine gauges a capacity run wants from Prometheus text (vLLM names and common
// alternatives; SPEC §8: names differ between engines), and summarizes a probe's scrapes. Pure.
import { namesFor, type GaugeKey } from './metricNames.ts';

/** One scrape's gauges; null where the engine exposes no such metric. */
export interface EngineGauges {
  running: number | null;
  waiting: number | null;
  kvUsage: number | null;
  preemptions: number | null;
  /** Counter: prompt tokens the engine computed (llama.cpp counts only those not served from its cache). */
  promptTokens: number | null;
  /** Counter: tokens generated. */
  generationTokens: number | null;
  /** Counter: prompt tokens served from a cache; growth during a cache-off run means prompts were reused. */
  cachedPromptTokens: number | null;
  /** Counter: prompt tokens looked up in the prefix cache (vLLM V1 and newest). */
  prefixCacheQueries: number | null;
}

const GAUGE_KEYS: GaugeKey[] = ['running', 'waiting', 'kvUsage', 'preemptions', 'promptTokens', 'generationTokens', 'cachedPromptTokens', 'prefixCacheQueries'];

// First match wins (metricNames.ts holds each engine version's names); values sum over label
// sets (several models or engines on one server).
const NAMES = Object.fromEntries(GAUGE_KEYS.map((k) => [k, namesFor(k)])) as Record<keyof EngineGauges, string[]>;

/** Parses exposition text into metric name → summed value (comments and histograms' series kept by full name). */
export function parsePrometheusText(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const brace = line.indexOf('{');
    const space = line.indexOf(' ');
    const nameEnd = brace >= 0 && (space < 0 || brace < space) ? brace : space;
    if (nameEnd <= 0) continue;
    const name = line.slice(0, nameEnd);
    const rest = brace >= 0 && brace === nameEnd ? line.slice(line.indexOf('}', brace) + 1) : line.slice(nameEnd);
    const value = Number(rest.trim().split(/\s+/)[0]);
    if (!Number.isFinite(value)) continue;
    out.set(name, (out.get(name) ?? 0) + value);
  }
  return out;
}

/** Picks the gauges a probe archives from parsed metrics. */
export function engineGauges(metrics: Map<string, number>): EngineGauges {
  const pick = (names: string[]) => {
    for (const n of names) if (metrics.has(n)) return metrics.get(n)!;
    return null;
  };
  const out = {} as EngineGauges;
  for (const key of Object.keys(NAMES) as (keyof EngineGauges)[]) out[key] = pick(NAMES[key]);
  return out;
}

