import { describe, expect, it } from 'vitest';
import { fetchSnippet, sdkSnippet } from './code-snippets.ts';
import { cosineMatrix, heatColour } from './similarity.ts';

describe('cosineMatrix', () => {
  it('gives 1 on the diagonal and the cosine elsewhere, symmetric', () => {
    const m = cosineMatrix([
      [1, 0],
      [0, 2],
      [1, 1],
    ]);
    expect(m[0]![0]).toBeCloseTo(1);
    expect(m[0]![1]).toBeCloseTo(0);
    expect(m[0]![2]).toBeCloseTo(Math.SQRT1_2);
    expect(m[2]![0]).toBeCloseTo(m[0]![2]!);
  });

  it('treats a zero vector as unrelated to everything', () => {
    expect(
      cosineMatrix([
        [0, 0],
        [1, 0],
      ])[0],
    ).toEqual([0, 0]);
  });
});

describe('heatColour', () => {
  const luminance = (rgb: string) => {
    const [r, g, b] = rgb.match(/\d+/g)!.map((c) => {
      const v = Number(c) / 255;
      return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * r! + 0.7152 * g! + 0.0722 * b!;
  };
  it('keeps text readable on every cell: a contrast of at least 4.5:1', () => {
    for (let s = -1; s <= 1; s += 0.05) {
      const { background, text } = heatColour(s);
      const bg = luminance(background);
      const contrast = text === '#000' ? (bg + 0.05) / 0.05 : 1.05 / (bg + 0.05);
      expect(contrast).toBeGreaterThanOrEqual(4.5);
    }
  });

  it('goes from pale blue to deep orange', () => {
    expect(heatColour(-1).background).not.toBe(heatColour(1).background);
    expect(heatColour(-1).text).toBe('#000');
  });
});

describe('code snippets', () => {
  const request = { method: 'POST', path: '/v1/chat/completions', body: { model: 'crimson-falcon-4', stream: true } };
  it('writes the fetch call with the request body', () => {
    const code = fetchSnippet(request, 'bundled');
    expect(code).toContain('`${lantern.baseURL}/chat/completions`');
    expect(code).toContain('"model": "crimson-falcon-4"');
    expect(code).toContain('Server-sent events');
  });

  it('writes the SDK call that makes the same request', () => {
    const code = sdkSnippet(request, 'bundled');
    expect(code).toContain('client.chat.completions.create({');
    expect(code).toContain('for await (const chunk of stream)');
    expect(
      sdkSnippet({ method: 'POST', path: '/v1/embeddings', body: { model: 'jade-mole-4', input: ['a'] } }, 'bundled'),
    ).toContain('client.embeddings.create(');
  });

  it('writes multipart form data for the audio routes, and the SDK call with the file', () => {
    const audio = {
      method: 'POST',
      path: '/v1/audio/transcriptions',
      body: {
        file: '<file recording.webm: 1200 bytes, audio/webm>',
        model: 'whisper-1',
        response_format: 'srt',
        temperature: '0.2',
        'timestamp_granularities[]': ['segment', 'word'],
      },
    };
    const fetchCode = fetchSnippet(audio, 'bundled');
    expect(fetchCode).toContain("form.append('file', file);");
    expect(fetchCode).toContain('form.append("timestamp_granularities[]", "word");');
    expect(fetchCode).toContain('body: form,');
    expect(fetchCode).not.toContain("'Content-Type'");
    expect(fetchCode).toContain('await response.text()');
    const sdkCode = sdkSnippet(audio, 'bundled');
    expect(sdkCode).toContain('client.audio.transcriptions.create({\n  file,\n  "model": "whisper-1",');
    expect(sdkCode).toContain('"temperature": 0.2');
    expect(sdkCode).toContain('"timestamp_granularities": [\n    "segment",\n    "word"\n  ]');
    expect(sdkCode).not.toContain('recording.webm');
    const streamed = sdkSnippet({ ...audio, body: { model: 'whisper-1', stream: 'true' } }, 'bundled');
    expect(streamed).toContain('"stream": true');
    expect(streamed).toContain("event.type === 'transcript.text.delta'");
    expect(sdkSnippet({ ...audio, path: '/v1/audio/translations' }, 'bundled')).toContain(
      'client.audio.translations.create({',
    );
  });
});
