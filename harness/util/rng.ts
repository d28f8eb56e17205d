// Seeded random numbers for every draw a probe makes (arrival gaps, lengths, prompt tokens), so
// the seed archived in the manifest reproduces the schedule byte for byte. Pure: no I/O, no clock.

/** A source of uniform numbers in [0, 1); each stream is independent of the others' draw counts. */
export interface Rng {
  next(): number;
}

/** 32-bit string hash (FNV-1a), so named sub-streams get distinct seeds from one recipe seed. */
function hash32(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** Derives the seed of a named stream (`arrivals`, `lengths`, ...) so adding draws to one never shifts another. */
export function deriveSeed(seed: number, label: string): number {
  return (Math.imul((seed >>> 0) ^ 0x9e3779b9, 0x85ebca6b) ^ hash32(label)) >>> 0;
}

/** xoshiro128** seeded through splitmix32: fast, 2^128 period, and identical on every platform. */
export function createRng(seed: number): Rng {
  let s = seed >>> 0;
  const split = () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  };
  let a = split();
  let b = split();
  let c = split();
  let d = split();
  if ((a | b | c | d) === 0) a = 1;
  return {
    next() {
      const result = Math.imul(rotl(Math.imul(b, 5), 7), 9) >>> 0;
      const t = b << 9;
      c ^= a;
      d ^= b;
      b ^= c;
      a ^= d;
      c ^= t;
      d = rotl(d, 11);
      return result / 4294967296;
    },
  };
}

const rotl = (x: number, k: number) => (x << k) | (x >>> (32 - k));

/** An exponential draw with the given mean (inverse transform; never 0 or Infinity). */
export function exponential(rng: Rng, mean: number): number {
  return -Math.log(1 - rng.next()) * mean;
}

/** A standard normal draw (Box–Muller; one value per call keeps streams simple to reason about). */
export function standardNormal(rng: Rng): number {
  const u = 1 - rng.next();
  const v = rng.next();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
}

/** A gamma draw with shape k and scale θ (Marsaglia–Tsang; shape < 1 boosted by U^(1/k)). */
export function gamma(rng: Rng, shape: number, scale: number): number {
  if (shape < 1) {
    const boost = Math.pow(1 - rng.next(), 1 / shape);
    return gamma(rng, shape + 1, scale) * boost;
  }
  const d = shape - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    let x: number;
    let v: number;
    do {
      x = standardNormal(rng);
      v = 1 + c * x;
    } while (v <= 0);
    v = v * v * v;
    const u = 1 - rng.next();
    if (Math.log(u) < 0.5 * x * x + d - d * v + d * Math.log(v)) return d * v * scale;
  }
}

/** Fisher–Yates permutation of 0..n-1, used to draw trace rows in a seeded order (as Vidur shuffles). */
export function permutation(rng: Rng, n: number): Uint32Array {
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(rng.next() * (i + 1));
    const t = out[i];
    out[i] = out[j];
    out[j] = t;
  }
  return out;
}
