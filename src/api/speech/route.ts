import type { Context } from 'hono';
import { SPEECH_CONTENT_TYPES } from '../../audio/index.ts';
import type { SpeakRequest, SpeakResult } from '../../engine-interface/index.ts';
import { bytesToBase64 } from '../base64.ts';
import { parseJsonObject } from '../request-body.ts';
import { ServedBy, type Env, type RouteDeps } from '../route-deps.ts';
import { byteStream, eventStream } from '../sse.ts';
import { speechParser } from './schema.ts';
import type { SpeechAudioDeltaEvent, SpeechAudioDoneEvent } from './wire.ts';

/**
 * `POST /v1/audio/speech`: the input said in a voice, encoded in `response_format`. The audio is sent as it is made, a
 * sentence at a time: its bytes, chunked (`stream_format: "audio"`, the default, what the openai SDK reads as a file),
 * or `speech.audio.delta` events of base64 audio then `speech.audio.done` with the usage (`"sse"`). A failure before the
 * first audio keeps its own status; after it, the body fails (audio) or ends with an error event (sse).
 */
export function createSpeech({ engine, limits, ownedBy, errorBody }: RouteDeps) {
  const parse = speechParser(limits);
  return async (c: Context<Env>) => {
    const params = parse(await parseJsonObject(c.get('body')));
    const served = new ServedBy(params.model, ownedBy);
    const request: SpeakRequest = {
      input: params.input,
      voice: params.voice,
      speed: params.speed,
      format: params.responseFormat,
      ...(params.instructions !== undefined && { instructions: params.instructions }),
    };
    const signal = c.req.raw.signal;

    if (params.streamFormat === 'sse') {
      const response = await eventStream(
        async (send, streamSignal) => {
          const result = await engine.speak(params.model, request, {
            signal: streamSignal,
            onServe: served.onServe,
            onEvent: (event) => {
              if (event.type === 'audio')
                send({ type: 'speech.audio.delta', audio: bytesToBase64(event.bytes) } satisfies SpeechAudioDeltaEvent);
            },
          });
          send({ type: 'speech.audio.done', usage: usage(result) } satisfies SpeechAudioDoneEvent);
        },
        { signal, doneFrame: false, errorBody: (error) => errorBody(error, c.get('requestId')) },
      );
      return served.label(response);
    }

    const response = await byteStream(
      async (write, streamSignal) => {
        await engine.speak(params.model, request, {
          signal: streamSignal,
          onServe: served.onServe,
          onEvent: (event) => {
            if (event.type === 'audio') write(event.bytes);
          },
        });
      },
      { signal, headers: { 'content-type': SPEECH_CONTENT_TYPES[params.responseFormat] } },
    );
    return served.label(response);
  };
}

const usage = (result: SpeakResult): SpeechAudioDoneEvent['usage'] => ({
  input_tokens: result.usage.inputTokens,
  output_tokens: result.usage.outputTokens,
  total_tokens: result.usage.inputTokens + result.usage.outputTokens,
});
