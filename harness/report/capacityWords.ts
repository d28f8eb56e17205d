// Phrases about a run's capacity that both the console (`fluidcap run`) and the report print, so
// they read the same in both. Pure.

/**
 * Where the search's highest passing probe lies outside the interval, why the two disagree, for the
 * console's line after the headline and the report's Estimate paragraph (null when it lies within). Both are as defined:
 * one probe's verdict is its own sample's, the interval pools every probe; near the knee a probe's
 * sample passes or fails by chance.
 */
export function passOutsideInterval(passQps: number | null, iv: { loQps: number | null; hiQps: number | null }): string | null {
  if (passQps === null) return null;
  if (iv.loQps !== null && passQps < iv.loQps) return 'below the 95% interval: pooled, each at the rate its arrivals\' bursts put it at, the probes put the capacity higher (near the knee a probe\'s sample passes or fails by chance, and draws its own bursts)';
  if (iv.hiQps !== null && passQps > iv.hiQps) return 'above the 95% interval: pooled, each at the rate its arrivals\' bursts put it at, the probes put the capacity lower (near the knee a probe\'s sample passes or fails by chance, and draws its own bursts)';
  return null;
}
