// Scrapes the engine's /metrics every few seconds during a probe into server-metrics.jsonl (one
// line per scrape: time from probe start, running, waiting, KV usage, preemptions, token counters,
// and every vllm:/sglang:/tgi:/llamacpp: series). An engine without /metrics yields no file and
// `available: false`.
import http from 'node:http';
import https from 'node:https';
import { writeSync, closeSync } from 'node:fs';
import { dirname } from 'node:path';
import { openAppendIn } from '../util/confinedFs.ts';
import { engineGauges, parsePrometheusText } from './prometheus.ts';
import { prefixCacheWitness } from './metricNames.ts';

export interface ScraperOptions {
  metricsUrl: string;
  file: string;
  intervalS: number;
  startNs: bigint;
  apiKey?: string;
}

/** A running scraper; stop() waits for a scrape in progress, scrapes once more and closes the file. */
export interface Scraper {
  stop(): Promise<{ scrapes: number; available: boolean; lastError: string | null }>;
}

/** Starts scraping now and then every intervalS until stopped. */
export function startScraper(o: ScraperOptions): Scraper {
  const url = new URL(o.metricsUrl);
  const transport = url.protocol === 'https:' ? https : http;
  let fd: number | null = null;
  let scrapes = 0;
  let available = false;
  let gaveUp = false;
  let lastError: string | null = null;
  let inProgress: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | null = null;
  let stopped = false;

  const fetchText = () =>
    new Promise<{ status: number; text: string }>((resolve, reject) => {
      const headers: Record<string, string> = o.apiKey ? { authorization: `Bearer ${o.apiKey}` } : {};
      const req = transport.get(url, { headers, timeout: Math.max(1000, o.intervalS * 1000) }, (res) => {
        const parts: Buffer[] = [];
        res.on('data', (b: Buffer) => parts.push(b));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8') }));
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error('metrics scrape timed out')));
      req.on('error', reject);
    });

  const scrape = async () => {
    const tS = Number(process.hrtime.bigint() - o.startNs) / 1e9;
    try {
      const { status, text } = await fetchText();
      if (status === 404 || status === 405 || status === 501) {
        // No /metrics on this engine (llama.cpp's server answers 501 without --metrics): say so once and stop asking.
        gaveUp = !available;
        lastError = `GET ${url.pathname} answered ${status}`;
        return;
      }
      if (status !== 200) {
        lastError = `GET ${url.pathname} answered ${status}`;
        return;
      }
      const metrics = parsePrometheusText(text);
      const series: Record<string, number> = {};
      for (const [k, v] of metrics) if (/^(vllm|sglang|tgi|llamacpp):/.test(k) && !/_bucket$/.test(k)) series[k] = v;
      fd ??= openAppendIn(dirname(o.file), o.file);
      const witness = prefixCacheWitness(metrics);
      // The counter read as the prompt-cache witness is named, or why there is none, so a missing value is never mistaken for 0.
      writeSync(fd, JSON.stringify({ tS: Math.round(tS * 1e6) / 1e6, ...engineGauges(metrics), prefixCacheWitness: witness.metric ?? witness.why, series }) + '\n');
      available = true;
      scrapes++;
    } catch (err) {
      lastError = (err as Error).message;
    }
  };

  const loop = () => {
    timer = null;
    if (stopped || gaveUp) return;
    inProgress = scrape().then(() => {
      if (!stopped && !gaveUp) timer = setTimeout(loop, o.intervalS * 1000);
    });
  };
  loop();
  return {
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      await inProgress;
      // One last scrape, so counters (tokens, cache hits) cover the probe's end and not only its last interval.
      if (available && !gaveUp) await scrape();
      if (fd !== null) closeSync(fd);
      fd = null;
      return { scrapes, available, lastError };
    },
  };
}
