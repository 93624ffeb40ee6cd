import { describe, expect, it } from 'vitest';
import { EngineError, type SpeechEvent } from '../../engine-interface/index.ts';
import type { SynthesisModel } from '../model-loaders.ts';
import { TaskQueue } from '../task-queue.ts';
import { checkSpeechFormat, PASS_TOKENS, SPEECH_SAMPLE_RATE, speakInPieces } from './speak-in-pieces.ts';

/**
 * A synthesis model for the layer above models: it "says" each piece as a tone of 10 ms per character at its own rate
 * (16 kHz, so the answer is resampled), and notes what it was asked. The real models are tested in test/speech.test.ts.
 */
function toneModel(maxInputTokens = 100): SynthesisModel & { said: string[]; counted: string[] } {
  const said: string[] = [];
  const counted: string[] = [];
  return {
    said,
    counted,
    sampleRate: 16_000,
    voices: ['deep', 'bright'],
    openaiVoices: { alloy: 'bright', onyx: 'deep' },
    maxInputTokens,
    tokenCount: (text) => {
      counted.push(text);
      return text.length;
    },
    async synthesize(text, voice, speed) {
      said.push(`${voice}:${text}`);
      const samples = new Float32Array(Math.round((160 * text.length) / speed));
      const pitch = voice === 'deep' ? 110 : 440;
      for (let i = 0; i < samples.length; i++) samples[i] = 0.5 * Math.sin((2 * Math.PI * pitch * i) / 16_000);
      return { samples, inputTokens: text.length };
    },
  };
}

const request = { input: 'One two. Three four five. Six.', voice: 'alloy', speed: 1, format: 'pcm' as const };

describe('speakInPieces', () => {
  it('says each sentence in its turn, sending its audio before the next is said, at 24 kHz', async () => {
    const model = toneModel();
    const events: string[] = [];
    let bytes = 0;
    const onEvent = (event: SpeechEvent) => {
      if (event.type === 'audio') bytes += event.bytes.byteLength;
      events.push(event.type === 'audio' ? 'audio' : `said ${event.characters}`);
    };
    const result = await speakInPieces(model, request, { queue: new TaskQueue(), onEvent });
    expect(model.said).toEqual(['bright:One two.', 'bright:Three four five.', 'bright:Six.']);
    expect(events).toEqual(['audio', 'said 8', 'audio', 'said 25', 'audio', 'said 30']);
    // 28 characters of 10 ms, resampled from 16 to 24 kHz, as 16-bit samples.
    expect(result.seconds).toBeCloseTo(0.28, 3);
    expect(bytes).toBe(2 * Math.round(result.seconds * SPEECH_SAMPLE_RATE));
    expect(result.usage).toEqual({ inputTokens: 28, outputTokens: Math.ceil(0.28 * 40) });
  });

  it("maps OpenAI's voices, takes the model's own, and refuses others naming them all", async () => {
    const model = toneModel();
    await speakInPieces(model, { ...request, input: 'Hi.', voice: 'onyx' }, { queue: new TaskQueue() });
    await speakInPieces(model, { ...request, input: 'Hi.', voice: 'bright' }, { queue: new TaskQueue() });
    expect(model.said).toEqual(['deep:Hi.', 'bright:Hi.']);
    const refusal = await speakInPieces(model, { ...request, voice: 'zeus' }, { queue: new TaskQueue() }).catch(
      (e: unknown) => e,
    );
    expect(refusal).toBeInstanceOf(EngineError);
    expect(refusal).toMatchObject({ kind: 'invalid_request', param: 'voice' });
    expect((refusal as Error).message).toContain('`alloy`, `onyx`, `deep`, `bright`');
  });

  it("cuts a sentence longer than the model's pass", async () => {
    const model = toneModel(12);
    await speakInPieces(model, { ...request, input: 'One two three four five six.' }, { queue: new TaskQueue() });
    expect(model.said.map((s) => s.slice(7))).toEqual(['One two', 'three four', 'five six.']);
  });

  it('lets other work run between sentences, and hears an abort between them', async () => {
    const queue = new TaskQueue();
    const model = toneModel();
    const abort = new AbortController();
    const order: string[] = [];
    const speaking = speakInPieces(model, request, {
      queue,
      signal: abort.signal,
      onEvent: (event) => {
        if (event.type !== 'progress') return;
        order.push(`said ${event.characters}`);
        // Another request's turn, queued while the first sentence was said: it runs before the second.
        if (event.characters === 8) void queue.run(async () => void order.push('other'));
        if (event.characters === 25) abort.abort();
      },
    });
    await expect(speaking).rejects.toMatchObject({ kind: 'aborted' });
    expect(order).toEqual(['said 8', 'other', 'said 25']);
    expect(model.said).toHaveLength(2);
  });

  it("counts each piece's tokens (phonemizes it) in the turn that says it: other work runs before the next is counted", async () => {
    const queue = new TaskQueue();
    const model = toneModel();
    const order: string[] = [];
    const synthesize = model.synthesize.bind(model);
    model.synthesize = (text, voice, speed) => {
      order.push(...model.counted.splice(0).map((counted) => `count ${counted}`), `say ${text}`);
      return synthesize(text, voice, speed);
    };
    await speakInPieces(model, request, {
      queue,
      onEvent: (event) => {
        if (event.type === 'progress' && event.characters === 8) void queue.run(async () => void order.push('other'));
      },
    });
    expect(order).toEqual([
      'count One two.',
      'say One two.',
      'other',
      'count Three four five.',
      'say Three four five.',
      'count Six.',
      'say Six.',
    ]);
  });

  it('says slower speech in shorter passes, so that no pass makes more than some seconds of audio', async () => {
    const sentence = Array.from({ length: 60 }, (_, i) => `w${i}`).join(' ') + '.';
    for (const speed of [1, 0.25]) {
      const model = toneModel(510);
      await speakInPieces(model, { ...request, input: sentence, speed }, { queue: new TaskQueue() });
      const passes = model.said.map((said) => said.slice('bright:'.length));
      expect(passes.join(' ')).toBe(sentence);
      expect(Math.max(...passes.map((pass) => pass.length))).toBeLessThanOrEqual(PASS_TOKENS * speed);
      expect(passes.length).toBeGreaterThan(1);
    }
  });

  it('never counts a span of more than 512 characters, however long the text or its words', async () => {
    for (const input of ['a'.repeat(4096), 'la '.repeat(1365), `${'la, '.repeat(1000)}la.`]) {
      const model = toneModel(510);
      let longest = 0;
      await speakInPieces(
        model,
        { ...request, input },
        {
          queue: new TaskQueue(),
          onEvent: () => (longest = Math.max(longest, ...model.counted.splice(0).map((text) => text.length))),
        },
      );
      expect(longest).toBeLessThanOrEqual(512);
      expect(
        model.said
          .map((said) => said.slice('bright:'.length))
          .join('')
          .replaceAll(' ', ''),
      ).toBe(input.replaceAll(' ', ''));
    }
  });

  it('refuses text with nothing to say, and an encoder that is not here before anything loads', async () => {
    await expect(
      speakInPieces(toneModel(), { ...request, input: '?! …' }, { queue: new TaskQueue() }),
    ).rejects.toMatchObject({ param: 'input' });
    const missing = async () => {
      throw new Error('Cannot find package');
    };
    await expect(checkSpeechFormat('mp3', missing)).rejects.toMatchObject({
      kind: 'invalid_request',
      param: 'response_format',
    });
    await expect(checkSpeechFormat('wav', missing)).resolves.toBeUndefined();
  });
});
