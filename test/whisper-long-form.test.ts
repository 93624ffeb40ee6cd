import { random, WhisperForConditionalGeneration } from '@huggingface/transformers';
import { InferenceSession, type Tensor as OrtTensor } from 'onnxruntime-node';
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { decodeWav } from '../src/audio/index.ts';
import type { TranscribeRequest, TranscriptEvent } from '../src/engine-interface/index.ts';
import { TaskQueue } from '../src/engines/task-queue.ts';
import { TransformersSpeechModel } from '../src/engines/transformers/speech-model.ts';
import { BUNDLED_MODELS } from './support/lantern.ts';
import { speechBytes } from './support/speech-fixture.ts';

/**
 * Lantern's long-form Whisper decoding against what transformers.js 4.3.1 does underneath it, on the bundled
 * tiny-whisper in Node: the decoder's tensors released window after window, the encoder run once a window, the earlier
 * text reset after a hot window, and word times aligned in the encoder's positions.
 */
let speech: TransformersSpeechModel;
beforeAll(async () => {
  speech = await TransformersSpeechModel.load(`${BUNDLED_MODELS}/tiny-whisper`, {
    queue: new TaskQueue(),
    id: 'tiny-whisper',
    device: 'cpu',
  });
});
beforeEach(() => random.seed(7)); // the fallback samples: the same draws every run
afterEach(() => vi.restoreAllMocks());

const samplesOf = (file: string) => decodeWav(speechBytes(file)).samples;
const request = (changes: Partial<Omit<TranscribeRequest, 'audio'>> = {}): Omit<TranscribeRequest, 'audio'> => ({
  task: 'transcribe',
  temperature: 0,
  words: false,
  language: 'en',
  ...changes,
});

type Run = (feeds: Record<string, OrtTensor>, ...rest: unknown[]) => Promise<Record<string, OrtTensor>>;
const sessionPrototype = (InferenceSession as unknown as { prototype: { run: Run } }).prototype;

/**
 * Runs `task` with the decoder's keys and values (`present.*`) placed as on WebGPU, where transformers.js asks
 * onnxruntime for them as GPU buffers that live until disposed: here they stay in memory but say `gpu-buffer`, so that
 * transformers.js disposes them where it would on WebGPU (onnxruntime-node is told `cpu` while it reads them).
 * Returns them, and the encoder's runs.
 */
async function onGpuPlacement(task: () => Promise<unknown>) {
  const placed: OrtTensor[] = [];
  let encoderRuns = 0;
  const run = sessionPrototype.run;
  const asPlaced = (tensor: OrtTensor, location: string) =>
    ((tensor as unknown as { dataLocation: string }).dataLocation = location);
  vi.spyOn(sessionPrototype, 'run').mockImplementation(async function (this: unknown, feeds, ...rest) {
    const fed = Object.values(feeds).filter((tensor) => placed.includes(tensor) && tensor.location === 'gpu-buffer');
    for (const tensor of fed) asPlaced(tensor, 'cpu');
    const outputs = await run.call(this, feeds, ...rest).finally(() => {
      for (const tensor of fed) if (tensor.location === 'cpu') asPlaced(tensor, 'gpu-buffer');
    });
    if ('last_hidden_state' in outputs) encoderRuns++;
    for (const [name, tensor] of Object.entries(outputs)) {
      if (name.startsWith('present')) {
        asPlaced(tensor, 'gpu-buffer');
        placed.push(tensor);
      }
    }
    return outputs;
  });
  await task();
  vi.mocked(sessionPrototype.run).mockRestore();
  return { placed, alive: placed.filter((tensor) => tensor.location !== 'none'), encoderRuns };
}

describe("the decoder's GPU tensors (transformers.js#1739)", () => {
  // Before: 328 of long.wav's 656 left alive with word times (a copy of the encoder's keys and values per token, and
  // each pass's cache), 304 of 656 without.
  it.each([true, false])('a multi-window transcription leaves none alive (word times: %s)', async (words) => {
    const progress: TranscriptEvent[] = [];
    const { placed, alive } = await onGpuPlacement(() =>
      speech.transcribe(samplesOf('long.wav'), request({ words }), { onEvent: (e) => progress.push(e) }),
    );
    expect(progress.filter((e) => e.type === 'progress').length).toBeGreaterThanOrEqual(3);
    expect(placed.length).toBeGreaterThan(100);
    expect(alive.length).toBe(0);
  });

  // Every generate() of a window reads the encoder output Lantern computed once for it: language detection's, here
  // (tiny-whisper never needs the temperature fallback on the fixture's audio, whose passes read it the same way).
  it('the encoder runs once a window, however many generate() calls read it', async () => {
    const generate = vi.spyOn(WhisperForConditionalGeneration.prototype, 'generate');
    let windows = 0;
    const { encoderRuns, alive } = await onGpuPlacement(() =>
      speech.transcribe(samplesOf('long.wav'), request({ language: undefined, words: true }), {
        onEvent: (e) => void (e.type === 'progress' && windows++),
      }),
    );
    expect(windows).toBeGreaterThanOrEqual(3);
    expect(generate.mock.calls.length).toBe(windows + 1); // the first window's detection, then a pass a window
    expect(encoderRuns).toBe(windows);
    expect(alive.length).toBe(0);
  });
});

describe('earlier text', () => {
  const startOfPrevious = 569; // <|startofprev|> in tiny-whisper's vocabulary
  const decoderInputs = (generate: { mock: { calls: unknown[][] } }) =>
    generate.mock.calls.map((call) => (call[0] as { decoder_input_ids: number[] }).decoder_input_ids);

  it('each window reads the prompt and the transcript so far', async () => {
    const generate = vi.spyOn(WhisperForConditionalGeneration.prototype, 'generate');
    await speech.transcribe(samplesOf('long.wav'), request({ prompt: 'Colours and days.' }));
    const inputs = decoderInputs(generate);
    expect(inputs.length).toBeGreaterThanOrEqual(3);
    for (const [i, ids] of inputs.entries()) expect(ids[0], `window ${i}`).toBe(startOfPrevious);
    expect(inputs[1]!.length).toBeGreaterThan(inputs[0]!.length);
  });

  it('a window decoded hotter than 0.5 resets it, prompt and all, as OpenAI does', async () => {
    const generate = vi.spyOn(WhisperForConditionalGeneration.prototype, 'generate');
    const result = await speech.transcribe(
      samplesOf('long.wav'),
      request({ prompt: 'Colours and days.', temperature: 0.8 }),
    );
    const inputs = decoderInputs(generate);
    expect(new Set(result.segments.map((s) => s.windowStart)).size).toBeGreaterThanOrEqual(2);
    expect(inputs[0]![0]).toBe(startOfPrevious); // the prompt, for the first window
    for (const ids of inputs.slice(1)) expect(ids).not.toContain(startOfPrevious);
  });
});

describe('word times', () => {
  it('are aligned over the encoder positions the audio covers (half its log-mel frames), not the padding', async () => {
    const extract = vi.spyOn(WhisperForConditionalGeneration.prototype, '_extract_token_timestamps');
    const samples = samplesOf('clip02.wav'); // 1.94 s, "The pink duck swims on Sunday."
    const result = await speech.transcribe(samples, request({ words: true }));
    expect(extract.mock.calls.map((call) => call[2])).toEqual([Math.floor(samples.length / 160 / 2)]); // 97 of 500
    // Cropped at its log-mel frames (194 positions, the last 97 the window's padding), "Sunday" was put at 1.7-1.7.
    const last = result.words!.at(-1)!;
    const segment = result.segments.at(-1)!;
    expect(last.word).toBe('Sunday');
    expect(last.start).toBeLessThan(segment.end);
    expect(last.end).toBeGreaterThan(last.start);
  });
});
