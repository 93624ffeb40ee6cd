/*
 * The wire format of `POST /v1/audio/speech`'s server-sent events (`stream_format: "sse"`), as OpenAI's API sends them:
 * data-only frames, no `[DONE]`.
 */

/** A chunk of the audio, in the request's format, base64. Concatenated, the chunks' bytes are the file. */
export interface SpeechAudioDeltaEvent {
  type: 'speech.audio.delta';
  audio: string;
}

/** The last event: the usage. */
export interface SpeechAudioDoneEvent {
  type: 'speech.audio.done';
  usage: { input_tokens: number; output_tokens: number; total_tokens: number };
}
