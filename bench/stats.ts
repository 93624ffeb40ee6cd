/** Small statistics for benchmark samples. */

export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  const high = Math.ceil(at);
  return sorted[low]! + (sorted[high]! - sorted[low]!) * (at - low);
}

export const median = (values: readonly number[]) => quantile(values, 0.5);
export const p95 = (values: readonly number[]) => quantile(values, 0.95);

/** Decode throughput from token timestamps: tokens after the first, over the time after the first. */
export function decodeRate(times: readonly number[]): number {
  if (times.length < 2) return NaN;
  return ((times.length - 1) * 1000) / (times.at(-1)! - times[0]!);
}

export const round = (value: number, digits = 2) => Number(value.toFixed(digits));
