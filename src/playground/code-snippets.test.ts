import { describe, expect, it } from 'vitest';
import { fetchSnippet, sdkSnippet } from './code-snippets.ts';

describe('speech snippets', () => {
  const speech = {
    method: 'POST',
    path: '/v1/audio/speech',
    body: { model: 'ochre-lark-4', input: 'Hello.', voice: 'alloy', speed: 1, response_format: 'wav' },
  };

  it('sends JSON, not a form, and plays the file', () => {
    const code = fetchSnippet(speech);
    expect(code).toContain("'Content-Type': 'application/json'");
    expect(code).toContain('"voice": "alloy"');
    expect(code).not.toContain('FormData');
    expect(code).toContain('new Audio(URL.createObjectURL(blob)).play();');
  });

  it('writes the SDK call with the request parameters', () => {
    const code = sdkSnippet(speech);
    expect(code).toContain('const response = await client.audio.speech.create({\n  "model": "ochre-lark-4",');
    expect(code).toContain('"response_format": "wav"');
    expect(code).toContain('await response.blob()');
  });

  it('reads pcm as it arrives, and gathers the audio of server-sent events', () => {
    const pcm = sdkSnippet({ ...speech, body: { ...speech.body, response_format: 'pcm' } });
    expect(pcm).toContain('response.body.getReader()');
    expect(pcm).toContain('24 kHz 16-bit little-endian mono');
    const sse = sdkSnippet({ ...speech, body: { ...speech.body, response_format: 'opus', stream_format: 'sse' } });
    expect(sse).toContain("event.type === 'speech.audio.delta'");
    expect(sse).toContain("new Blob(parts, { type: 'audio/ogg' })");
  });
});
