/**
 * A small, fast PRNG (sfc32) for reproducible sampling: the same seed gives the same sequence on every platform,
 * which Math.random cannot promise. Not for secrets.
 */
export type Random = () => number;

/**
 * A 31-bit seed drawn from a seed of any safe integer (all of it), or at random when none is given: what llama.cpp's
 * native draws take, and what the choices of a request mix their own from (`rowSeed`).
 */
export const seed31 = (seed?: number): number => Math.floor(seededRandom(seed)() * 0x7fffffff);

/** A generator seeded from any safe integer (negative and above 2^32 included), or randomly when none is given. */
export function seededRandom(seed?: number): Random {
  let a: number, b: number, c: number, d: number;
  if (seed === undefined) {
    [a, b, c, d] = crypto.getRandomValues(new Uint32Array(4)) as unknown as [number, number, number, number];
  } else {
    // splitmix32 spreads the seed's low and high words over the four state words.
    const lo = seed >>> 0;
    const hi = Math.floor(seed / 0x1_0000_0000) >>> 0;
    let s = lo ^ Math.imul(hi, 0x9e3779b9);
    const next = () => {
      s = (s + 0x9e3779b9) | 0;
      let z = s;
      z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
      z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
      return (z ^ (z >>> 16)) >>> 0;
    };
    [a, b, c, d] = [next(), next() ^ hi, next(), next()];
  }
  const random: Random = () => {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 0x1_0000_0000;
  };
  // Discard the first outputs: sfc32 mixes a fresh state over its first few rounds.
  for (let i = 0; i < 12; i++) random();
  return random;
}
