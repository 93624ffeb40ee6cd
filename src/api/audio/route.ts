import type { Context } from 'hono';
import type { TranscribeRequest } from '../../engine-interface/index.ts';
import { ServedBy, type Env, type RouteDeps } from '../route-deps.ts';
import { eventStream } from '../sse.ts';
import { readAudioRequest, type AudioParams } from './schema.ts';
import {
  jsonTranscript,
  srtTranscript,
  verboseTranscript,
  vttTranscript,
  type TranscriptionTextDeltaEvent,
  type TranscriptionTextDoneEvent,
} from './wire.ts';

/**
 * `POST /v1/audio/transcriptions` (`task: 'transcribe'`) and `POST /v1/audio/translations` (`'translate'`: the speech
 * written in English). The answer is in the request's `response_format`: JSON (`json`, `verbose_json`) or text
 * (`text`, `srt`, `vtt`, as `text/plain`, which the openai SDK returns as a string). A streamed transcription sends
 * `transcript.text.delta` events as the model writes each window's text for good, then `transcript.text.done`.
 */
export function createTranscription(
  { engine, limits, ownedBy, errorBody }: RouteDeps,
  task: TranscribeRequest['task'],
) {
  return async (c: Context<Env>) => {
    const params = await readAudioRequest(c.req.raw, c.get('body'), limits, task === 'translate');
    const served = new ServedBy(params.model, ownedBy);
    const request = transcribeRequest(params, task, limits.maxAudioSeconds);
    const signal = c.req.raw.signal;

    if (params.stream) {
      const response = await eventStream(
        async (send, streamSignal) => {
          const result = await engine.transcribe(params.model, request, {
            signal: streamSignal,
            onServe: served.onServe,
            onEvent: (event) => {
              if (event.type === 'delta')
                send({ type: 'transcript.text.delta', delta: event.text } satisfies TranscriptionTextDeltaEvent);
            },
          });
          send({ type: 'transcript.text.done', text: result.text } satisfies TranscriptionTextDoneEvent);
        },
        { signal, doneFrame: false, errorBody: (error) => errorBody(error, c.get('requestId')) },
      );
      return served.label(response);
    }

    const result = await engine.transcribe(params.model, request, { signal, onServe: served.onServe });
    switch (params.responseFormat) {
      case 'json':
        return served.label(c.json(jsonTranscript(result)));
      case 'verbose_json':
        return served.label(c.json(verboseTranscript(result, task, params.granularities)));
      case 'text':
        return served.label(c.text(`${result.text}\n`));
      case 'srt':
        return served.label(c.text(srtTranscript(result)));
      case 'vtt':
        return served.label(c.text(vttTranscript(result)));
    }
  };
}

function transcribeRequest(
  params: AudioParams,
  task: TranscribeRequest['task'],
  maxSeconds: number,
): TranscribeRequest {
  return {
    audio: params.file,
    task,
    ...(params.language !== undefined && { language: params.language }),
    ...(params.prompt !== undefined && { prompt: params.prompt }),
    temperature: params.temperature,
    words: params.granularities.has('word'),
    maxSeconds,
  };
}
