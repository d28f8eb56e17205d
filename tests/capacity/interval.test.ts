// The capacity estimate and its interval on synthetic evidence whose true curve is known: the
// interval contains the true crossing in nearly every seeded replication (and would not if the
// clustering were ignored), ends the evidence cannot bound are open, the fit is monotone, and
// several SLO entries together cross at the lowest of their crossings, and a flat knee's slope
// widens the interval where the monotone fit alone would pin it between two probes, and rates a
// percent apart are pooled so that many thin probes do not pull the estimate down, and each point
// sits at the arrival rate its probes realized, which the misses follow.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { capacityInterval, crossing, describeInterval, isotonic, logisticLine, overdispersion, type ProbeEvidence } from '../../harness/capacity/interval.ts';
import { createRng, type Rng } from '../../harness/util/rng.ts';

const P0 = 0.01;
// A knee: the miss fraction grows geometrically with rate, P0 at exactly 40 QPS.
const truth = (qps: number) => Math.min(0.9, P0 * Math.exp((qps - 40) / 1.2));

// n requests whose misses come in clusters of `cluster` (a burst misses together): the evidence
// holds n/cluster independent pieces, which is what τ = cluster says.
function probe(rng: Rng, qps: number, n: number, cluster = 1, name = 'fluidity', p = truth(qps)): ProbeEvidence {
  let misses = 0;
  for (let i = 0; i < n / cluster; i++) if (rng.next() < p) misses += cluster;
  return { qps, durationS: n / qps, parts: [{ name, observed: n, misses, tau: cluster, allowedFraction: P0 }] };
}

test('the fit is monotone and pools violators by their weights', () => {
  assert.equal(isotonic([0.1, 0.3, 0.2, 0.5], [1, 1, 3, 1]).map((x) => +x.toFixed(9)), [0.1, 0.225, 0.225, 0.5]);
  const fit = isotonic([0.5, 0.4, 0.3, 0.2], [1, 1, 1, 1]);
  for (let i = 1; i < fit.length; i++) assert.ok(fit[i] >= fit[i - 1]);
  assert.equal(isotonic([0.01, 0.02], [5, 5]), [0.01, 0.02]);
});

test('the crossing interpolates between the rates around the allowance, on log-odds', () => {
  const c = crossing([{ qps: 40, w: 100, p: 0.001 }, { qps: 50, w: 100, p: 0.1 }], P0);
  assert.ok(c > 44 && c < 46, String(c)); // halfway on log-odds (0.001 → 0.01 → 0.1)
  assert.is(crossing([{ qps: 40, w: 100, p: 0.001 }], P0), Infinity);
  assert.is(crossing([{ qps: 40, w: 100, p: 0.5 }], P0), -Infinity);
});

test('the 95% interval contains the true crossing in nearly all replications, and clustering counted by τ keeps it so', () => {
  let covered = 0;
  let ignoredCovered = 0;
  const reps = 60;
  for (let r = 0; r < reps; r++) {
    const rng = createRng(100 + r);
    const probes = [36, 38, 39, 40.5, 41.5, 43, 46].map((q) => probe(rng, q, 3000, 6));
    const iv = capacityInterval(probes, { seed: r, draws: 800 });
    assert.is(iv.open, 'none');
    assert.ok(iv.loQps! <= iv.estimateQps! && iv.estimateQps! <= iv.hiQps!);
    if (iv.loQps! <= 40 && 40 <= iv.hiQps!) covered++;
    // The same counts read as independent requests: too narrow.
    const naive = capacityInterval(probes.map((p) => ({ ...p, parts: p.parts.map((e) => ({ ...e, tau: 1 })) })), { seed: r, draws: 800 });
    if (naive.loQps !== null && naive.hiQps !== null && naive.loQps <= 40 && 40 <= naive.hiQps) ignoredCovered++;
  }
  assert.ok(covered / reps >= 0.88, `covered ${covered}/${reps}`);
  assert.ok(ignoredCovered < covered, `τ ignored covered ${ignoredCovered}/${reps}, counted ${covered}/${reps}`);
});

test('an end the evidence cannot bound is open', () => {
  const rng = createRng(7);
  // Everything passes clearly: the capacity is above the highest rate, nothing caps it.
  const low = capacityInterval([30, 33, 35].map((q) => probe(rng, q, 2000)));
  assert.is(low.open, 'hi');
  assert.is(low.hiQps, null);
  assert.is(low.estimateQps, null);
  assert.ok(low.loQps !== null && low.loQps >= 30, String(low.loQps));
  assert.match(describeInterval(low), /open/);
  // Everything fails clearly: nothing floors it.
  const high = capacityInterval([50, 60].map((q) => probe(rng, q, 500)));
  assert.is(high.open, 'lo');
  assert.is(high.loQps, null);
  // Few requests and no miss at the only rate below the knee: 40 requests cannot show P99 holds.
  const thin = capacityInterval([probe(rng, 35, 40), probe(rng, 50, 400)]);
  assert.is(thin.open, 'lo');
  // No evidence at all.
  assert.is(capacityInterval([]).open, 'both');
  assert.is(capacityInterval([]).probesUsed, 0);
});

test('several SLO entries: the headline is the lowest crossing, each entry keeps its own', () => {
  const rng = createRng(11);
  const probes = [34, 36, 38, 40, 42, 44, 46].map((q) => {
    const a = probe(rng, q, 3000, 1, 'fluidity');
    const b = probe(rng, q, 3000, 1, 'ttft', Math.min(0.9, P0 * Math.exp((q - 37) / 1.2)));
    return { ...a, parts: [...a.parts, ...b.parts] };
  });
  const iv = capacityInterval(probes, { seed: 3 });
  const ttft = iv.perSlo.find((e) => e.name === 'ttft')!;
  const fluidity = iv.perSlo.find((e) => e.name === 'fluidity')!;
  assert.ok(ttft.estimateQps! < fluidity.estimateQps!);
  assert.ok(Math.abs(iv.estimateQps! - ttft.estimateQps!) < 1e-9);
  assert.ok(iv.hiQps! <= fluidity.hiQps! + 1e-9);
  assert.is(iv.probesUsed, 7);
  assert.ok(Math.abs(iv.loadSeconds - probes.reduce((t, p) => t + p.durationS, 0)) < 1e-9);
});

test('draws are seeded: the same evidence gives the same interval', () => {
  const rng = createRng(5);
  const probes = [38, 40, 42].map((q) => probe(rng, q, 2000, 3));
  assert.equal(capacityInterval(probes), capacityInterval(probes));
});

test('each end moves out by the shape margin\'s share of the gap between the probed rates around it, never past them', () => {
  const rng = createRng(21);
  const probes = [30, 36, 38, 40, 42, 44, 50].map((q) => probe(rng, q, 3000, 2));
  const bare = capacityInterval(probes, { shapeMargin: 0 });
  const wide = capacityInterval(probes, { shapeMargin: 0.5 });
  assert.is(wide.estimateQps, bare.estimateQps);
  const rates = [30, 36, 38, 40, 42, 44, 50];
  const gapAround = (x: number, up: boolean) => {
    const i = up ? rates.findIndex((r) => r > x) : rates.findIndex((r) => r >= x);
    return rates[i] - rates[i - 1];
  };
  assert.ok(Math.abs(bare.loQps! - wide.loQps! - 0.5 * gapAround(bare.loQps!, false)) < 1e-9, `${bare.loQps} → ${wide.loQps}`);
  assert.ok(Math.abs(wide.hiQps! - bare.hiQps! - 0.5 * gapAround(bare.hiQps!, true)) < 1e-9, `${bare.hiQps} → ${wide.hiQps}`);
  const huge = capacityInterval(probes, { shapeMargin: 50 });
  assert.is(huge.loQps, 30);
  assert.is(huge.hiQps, 50);
});

test('overdispersion: about 1 for counts on a logistic curve, more when probes scatter beyond their counts', () => {
  const curve = (q: number) => 1 / (1 + Math.exp(-(q - 40) / 1.5));
  const onCurve = [36, 38, 40, 42, 44].map((qps) => ({ qps, n: 400, m: 400 * curve(qps) }));
  assert.ok(overdispersion(onCurve) < 1.01, String(overdispersion(onCurve)));
  const scattered = onCurve.map((p, i) => ({ ...p, m: Math.min(p.n, Math.max(0, p.m + (i % 2 ? 60 : -60))) }));
  assert.ok(overdispersion(scattered) > 3, String(overdispersion(scattered)));
  assert.is(overdispersion(onCurve.slice(0, 2)), 1);
  // Dividing the effective counts by it widens the interval.
  const rng = createRng(31);
  const probes = [36, 38, 40, 42, 44].map((q) => probe(rng, q, 3000, 2));
  const plain = capacityInterval(probes, { shapeMargin: 0 });
  const divided = capacityInterval(probes, { shapeMargin: 0, minDispersion: 4 });
  assert.ok(divided.hiQps! - divided.loQps! > plain.hiQps! - plain.loQps!);
});

// A knee straight in log-odds, crossing P0 at 40 QPS, rising `slope` per QPS. 0.026 is the 70B's
// (its long-run fraction 0.87% → 1.09% from 0.29 to 0.36 QPS, scaled to a crossing at 40); 0.8
// the quickstart-like knee above.
const knee = (slope: number) => (qps: number) => 1 / (1 + Math.exp(-(Math.log(P0 / (1 - P0)) + slope * (qps - 40))));
// Evidence holding exactly the misses the curve expects, or `misses` where given: a full probe's
// counts below the knee, an early-stopped fail's above it (as the 70B's searches bring them).
function exact(curve: (q: number) => number, spec: [qps: number, n: number, misses?: number][]): ProbeEvidence[] {
  return spec.map(([qps, n, misses]) => ({ qps, durationS: 900, parts: [{ name: 'tbt', observed: n, misses: misses ?? Math.round(n * curve(qps)), tau: 1, allowedFraction: P0 }] }));
}
const searched: [number, number][] = [[30, 20000], [36, 20000], [38.5, 20000], [38.8, 20000], [42, 3000], [45, 3000], [50, 3000]];

test('the knee\'s log-odds line recovers the slope of counts on it', () => {
  const curve = knee(0.026);
  const line = logisticLine(searched.map(([qps, n]) => ({ qps, n, m: n * curve(qps) })));
  assert.ok(Math.abs(line.slope - 0.026) < 1e-6, String(line.slope));
  assert.ok(Math.abs(line.fraction(40) - P0) < 1e-9);
  // A point without a miss still counts (by its observations), it has no log-odds of its own.
  assert.ok(logisticLine([{ qps: 30, n: 500, m: 0 }, { qps: 40, n: 500, m: 5 }, { qps: 50, n: 500, m: 50 }]).slope > 0);
});

test('with the same counts, a flat knee gets a wider interval than a steep one, and both contain the true crossing', () => {
  const flat = capacityInterval(exact(knee(0.026), searched));
  const steep = capacityInterval(exact(knee(0.8), searched));
  for (const iv of [flat, steep]) {
    assert.is(iv.open, 'none');
    assert.ok(iv.loQps! <= 40 && 40 <= iv.hiQps!, `${iv.loQps}–${iv.hiQps}`);
  }
  assert.ok(flat.hiQps! - flat.loQps! > 3 * (steep.hiQps! - steep.loQps!), `flat ${flat.loQps}–${flat.hiQps}, steep ${steep.loQps}–${steep.hiQps}`);
});

test('on a flat knee, a sure fail just beside a sure pass no longer pins the interval between them', () => {
  // The 70B's searches' pattern: passes with a full probe's counts, then at 39 QPS (below the knee
  // at 40) an early-stopped fail whose 1,400 observations read 1.8% where the curve has 0.97%.
  const probes = exact(knee(0.026), [...searched.slice(0, 4), [39, 1400, 25], ...searched.slice(4)]);
  // Every rate its own point: 38.5, 38.8 and 39 QPS pooled would hide the pinning this is about.
  const monotone = capacityInterval(probes, { shape: 'monotone', poolWithin: 0 });
  assert.ok(monotone.hiQps! < 40, `the monotone fit alone: ${monotone.loQps}–${monotone.hiQps}`);
  const pooled = capacityInterval(probes, { poolWithin: 0 });
  assert.ok(pooled.loQps! <= 40 && 40 <= pooled.hiQps!, `${pooled.loQps}–${pooled.hiQps}`);
  assert.is(pooled.estimateQps, monotone.estimateQps);
  // Wide where the knee is flat, not open: the line's draws stay within the knee's rates.
  assert.is(pooled.open, 'none');
  assert.ok(pooled.hiQps! - pooled.loQps! < 0.25 * 40, `${pooled.loQps}–${pooled.hiQps}`);
});

test('a long search\'s many thin probes under a percent apart: pooled, the estimate is not pulled below the knee', () => {
  // Forty-one rates from 34 to 46 QPS, each with sixty effective observations (about 0.6 expected
  // misses at the knee), as a search with a large budget leaves them. Each point's prior half miss
  // then weighs as much as its data; unpooled, the monotone fit reads the passes below the knee too
  // high and its crossing too low.
  const reps = 30;
  const errors = { apart: [] as number[], pooled: [] as number[] };
  const covered = { apart: 0, pooled: 0 };
  for (let r = 0; r < reps; r++) {
    const rng = createRng(500 + r);
    const probes = Array.from({ length: 41 }, (_, i) => probe(rng, 34 + i * 0.3, 60));
    for (const [key, options] of [['apart', { poolWithin: 0 }], ['pooled', {}]] as const) {
      const iv = capacityInterval(probes, { seed: r, draws: 800, ...options });
      errors[key].push(iv.estimateQps! - 40);
      if (iv.loQps! <= 40 && 40 <= iv.hiQps!) covered[key]++;
    }
  }
  const mean = (xs: number[]) => xs.reduce((t, x) => t + x, 0) / xs.length;
  assert.ok(mean(errors.apart) < -1, `every rate apart: mean error ${mean(errors.apart)} QPS`);
  assert.ok(Math.abs(mean(errors.pooled)) < 0.6, `pooled: mean error ${mean(errors.pooled)} QPS`);
  assert.ok(covered.pooled >= 0.9 * reps && covered.pooled > covered.apart, `covered: pooled ${covered.pooled}, apart ${covered.apart} of ${reps}`);
});

test('a point sits at the arrival rate its probes realized, pooled by their planned rate', () => {
  const at = (qps: number, arrivalQps: number | undefined, misses: number): ProbeEvidence => ({ qps, arrivalQps, durationS: 100, parts: [{ name: 'fluidity', observed: 2000, misses, tau: 1, allowedFraction: P0 }] });
  // Planned 38 passes, 42 fails; each drew a different rate than planned.
  const planned = [at(38, undefined, 4), at(42, undefined, 80)];
  const realized = [at(38, 39, 4), at(42, 43, 80)];
  const a = capacityInterval(planned, { draws: 400 });
  const b = capacityInterval(realized, { draws: 400 });
  // The same counts read one QPS higher: the crossing moves up by about that much.
  assert.ok(Math.abs(b.estimateQps! - a.estimateQps! - 1) < 0.2, `${a.estimateQps} → ${b.estimateQps}`);
  // Read at the planned rates, the realized ones change nothing.
  assert.equal(capacityInterval(realized, { draws: 400, rateAxis: 'planned' }), a);
  // Two probes planned at 40 (within the pooling) are one point, at their effective-count-weighted realized rate.
  const pooled = capacityInterval([at(38, 38, 4), at(40, 39, 30), { ...at(40, 41.5, 30), parts: [{ name: 'fluidity', observed: 2000, misses: 30, tau: 4, allowedFraction: P0 }] }, at(42, 42, 80)], { draws: 400 });
  const one = capacityInterval([at(38, 38, 4), { ...at(40, 39.5, 60), parts: [{ name: 'fluidity', observed: 2500, misses: 37.5, tau: 1, allowedFraction: P0 }] }, at(42, 42, 80)], { draws: 400 });
  assert.is(pooled.estimateQps, one.estimateQps);
});

test('probes whose misses follow the rate they realized: read there, the estimate errs less than at the planned rate', () => {
  const errors = { realized: [] as number[], planned: [] as number[] };
  for (let r = 0; r < 60; r++) {
    const rng = createRng(500 + r);
    // 400 requests a probe: a Poisson draw's rate scatters by about 5% around the planned one.
    const probes = [37, 38.5, 39.5, 40.5, 41.5, 43].map((q) => {
      const drawn = q * (1 + 0.05 * (rng.next() + rng.next() + rng.next() - 1.5) * 2);
      return { ...probe(rng, q, 4000, 4, 'fluidity', truth(drawn)), arrivalQps: drawn };
    });
    for (const axis of ['realized', 'planned'] as const) errors[axis].push(Math.abs(capacityInterval(probes, { seed: r, draws: 400, rateAxis: axis }).estimateQps! - 40));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  assert.ok(median(errors.realized) < 0.8 * median(errors.planned), `median error realized ${median(errors.realized)}, planned ${median(errors.planned)}`);
});

test('by default a point sits at the rate its probes\' bursts put them at, a token-gap entry\'s at the rate they realized', () => {
  const at = (qps: number, arrivalQps: number | undefined, burstQps: number | undefined, misses: number, name = 'fluidity'): ProbeEvidence => ({ qps, arrivalQps, burstQps, durationS: 100, parts: [{ name, observed: 2000, misses, tau: 1, allowedFraction: P0 }] });
  const realized = capacityInterval([at(38, 39, undefined, 4), at(42, 43, undefined, 80)], { draws: 400 });
  const bursts = capacityInterval([at(38, 39, 40, 4), at(42, 43, 44, 80)], { draws: 400 });
  // The same counts read one QPS above the realized rates: the crossing moves up by about that much.
  assert.ok(Math.abs(bursts.estimateQps! - realized.estimateQps! - 1) < 0.2, `${realized.estimateQps} → ${bursts.estimateQps}`);
  // Asked for the realized axis, the bursts change nothing.
  assert.equal(capacityInterval([at(38, 39, 40, 4), at(42, 43, 44, 80)], { draws: 400, rateAxis: 'realized' }), realized);
  // A TBT entry's misses are token gaps: read at the realized rate whatever the bursts say.
  const gaps = (b: number | undefined) => capacityInterval([at(38, 39, b && b - 4, 4, 'tbt'), at(42, 43, b, 80, 'tbt')], { draws: 400 });
  assert.equal(gaps(46), gaps(undefined));
});

test.run();

