import { describe, expect, it } from 'vitest';
import { resample } from './resample.ts';

const tone = (frequency: number, rate: number, seconds: number, amplitude = 0.8) =>
  Float32Array.from(
    { length: Math.round(rate * seconds) },
    (_, i) => amplitude * Math.sin((2 * Math.PI * frequency * i) / rate),
  );

const rms = (samples: Float32Array) => Math.sqrt(samples.reduce((sum, v) => sum + v * v, 0) / samples.length);

/** Zero crossings going up, per second: the frequency of a clean tone. */
const frequencyOf = (samples: Float32Array, rate: number) => {
  let rising = 0;
  for (let i = 1; i < samples.length; i++) if (samples[i - 1]! < 0 && samples[i]! >= 0) rising++;
  return (rising * rate) / samples.length;
};

/** The middle, away from the edges where the input is taken as silence beyond its ends. */
const middle = (samples: Float32Array) => samples.subarray(samples.length / 10, samples.length - samples.length / 10);

describe('resample', () => {
  it('returns the same array at the same rate', () => {
    const samples = tone(440, 16_000, 0.1);
    expect(resample(samples, 16_000, 16_000)).toBe(samples);
  });

  it.each([
    [44_100, 16_000],
    [48_000, 16_000],
    [22_050, 16_000],
    [8_000, 16_000],
    [16_000, 44_100],
  ])('keeps a 1 kHz tone’s amplitude and frequency from %i Hz to %i Hz', (from, to) => {
    const out = resample(tone(1000, from, 1), from, to);
    expect(out.length).toBe(to);
    const kept = middle(out);
    expect(rms(kept)).toBeCloseTo(0.8 * Math.SQRT1_2, 2);
    expect(frequencyOf(kept, to)).toBeCloseTo(1000, -1);
    // Sample by sample, not just on average: the output is the tone at the new rate.
    const expected = tone(1000, to, 1);
    let worst = 0;
    for (let i = to / 10; i < to - to / 10; i++) worst = Math.max(worst, Math.abs(out[i]! - expected[i]!));
    expect(worst).toBeLessThan(0.01);
  });

  it.each([44_100, 48_000])(
    'removes a 10 kHz tone going from %i Hz to 16 kHz, where it would alias to 6 kHz',
    (from) => {
      const out = middle(resample(tone(10_000, from, 1), from, 16_000));
      expect(rms(out)).toBeLessThan(0.8 * Math.SQRT1_2 * 1e-3); // below −60 dB
    },
  );

  it('keeps a constant constant and the length in proportion', () => {
    const out = resample(new Float32Array(44_100).fill(0.5), 44_100, 16_000);
    expect(out.length).toBe(16_000);
    for (const v of middle(out)) expect(v).toBeCloseTo(0.5, 5);
    expect(resample(new Float32Array(3), 48_000, 16_000).length).toBe(1);
    expect(resample(new Float32Array(0), 48_000, 16_000).length).toBe(0);
  });

  it('handles rates whose ratio has no small period, and fractional rates', () => {
    const out = resample(tone(1000, 44_100, 1), 44_100, 16_001);
    expect(out.length).toBe(16_001);
    expect(rms(middle(out))).toBeCloseTo(0.8 * Math.SQRT1_2, 2);
    expect(frequencyOf(middle(resample(tone(1000, 22_050, 1), 22_050, 15_999.5)), 15_999.5)).toBeCloseTo(1000, -1);
  });

  it('rejects rates that are not positive numbers', () => {
    expect(() => resample(new Float32Array(4), 0, 16_000)).toThrow(RangeError);
    expect(() => resample(new Float32Array(4), 16_000, Number.NaN)).toThrow(/positive numbers/);
  });

  it('converts a minute of 48 kHz audio quickly (an hour in seconds)', () => {
    const minute = tone(440, 48_000, 60);
    const started = performance.now();
    resample(minute, 48_000, 16_000);
    // About 80 ms here; the bound only catches a loop gone quadratic or an unrolled path lost.
    expect(performance.now() - started).toBeLessThan(1500);
  });
});
