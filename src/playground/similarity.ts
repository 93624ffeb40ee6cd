/** Cosine similarity of every pair of vectors: the matrix the embeddings heatmap shows. */
export function cosineMatrix(vectors: readonly (readonly number[])[]): number[][] {
  const norms = vectors.map((v) => Math.sqrt(v.reduce((sum, x) => sum + x * x, 0)));
  return vectors.map((a, i) =>
    vectors.map((b, j) => {
      let dot = 0;
      for (let k = 0; k < a.length; k++) dot += a[k]! * b[k]!;
      const norm = norms[i]! * norms[j]!;
      return norm === 0 ? 0 : dot / norm;
    }),
  );
}

/**
 * A heatmap colour for a similarity in [-1, 1], cool for dissimilar and warm for similar, and the text colour that
 * reads best on it: black or white, whichever contrasts more (one of them always reaches 4.5:1, WCAG AA).
 */
export function heatColour(similarity: number): { background: string; text: string } {
  const t = Math.max(0, Math.min(1, (similarity + 1) / 2));
  const [r, g, b] = hslToRgb(220 - 200 * t, 0.8, 0.92 - 0.47 * t);
  const luminance = 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
  const onBlack = (luminance + 0.05) / 0.05;
  const onWhite = 1.05 / (luminance + 0.05);
  return { background: `rgb(${r} ${g} ${b})`, text: onBlack >= onWhite ? '#000' : '#fff' };
}

/** sRGB channel (0–255) to linear light, for relative luminance. */
const linear = (channel: number) => {
  const c = channel / 255;
  return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
};

function hslToRgb(hue: number, saturation: number, lightness: number): [number, number, number] {
  const a = saturation * Math.min(lightness, 1 - lightness);
  const f = (n: number) => {
    const k = (n + hue / 30) % 12;
    return Math.round(255 * (lightness - a * Math.max(-1, Math.min(k - 3, 9 - k, 1))));
  };
  return [f(0), f(8), f(4)];
}
