import type { RealtimeServerEvent } from 'openai/resources/realtime/realtime';
import { describe, expect, it } from 'vitest';
import { VoiceLog } from './voice-log.ts';

/** A server event as the wire has it; the fields the log does not read are left out. */
const event = (type: string, fields: Record<string, unknown> = {}) =>
  ({ type, event_id: `event_${type}`, ...fields }) as unknown as RealtimeServerEvent;

describe('the voice tab’s log', () => {
  it('shows a spoken turn: the user’s transcript, the assistant’s as it streams, and the latency to first audio', () => {
    const log = new VoiceLog();
    log.apply(event('input_audio_buffer.speech_started', { item_id: 'item_1', audio_start_ms: 500 }), 1000);
    expect(log.entries).toEqual([{ kind: 'user', itemId: 'item_1', text: '', done: false }]);
    expect(log.apply(event('input_audio_buffer.speech_stopped', { item_id: 'item_1' }), 2000)).toBe(false);
    log.apply(event('conversation.item.input_audio_transcription.delta', { item_id: 'item_1', delta: 'Four ' }), 2100);
    log.apply(
      event('conversation.item.input_audio_transcription.completed', { item_id: 'item_1', transcript: 'Four four.' }),
      2200,
    );
    log.apply(event('response.output_audio_transcript.delta', { item_id: 'item_2', delta: 'Hello' }), 2300);
    log.apply(event('response.output_audio_transcript.delta', { item_id: 'item_2', delta: ' there' }), 2400);
    log.apply(event('output_audio_buffer.started', { response_id: 'resp_1' }), 2750.4);
    log.apply(event('response.output_audio_transcript.done', { item_id: 'item_2', transcript: 'Hello there.' }), 2800);
    expect(log.entries).toEqual([
      { kind: 'user', itemId: 'item_1', text: 'Four four.', done: true },
      { kind: 'assistant', itemId: 'item_2', text: 'Hello there.', done: true },
      { kind: 'latency', turn: 1, ms: 750 },
    ]);
    // Audio that starts without a spoken turn before it (a typed message's reply) has no latency to show.
    log.apply(event('output_audio_buffer.started', { response_id: 'resp_2' }), 4000);
    expect(log.latencies).toEqual([750]);
  });

  it('shows a tool call once, with the result the page answered', () => {
    const log = new VoiceLog();
    log.apply(
      event('response.function_call_arguments.done', { call_id: 'call_1', name: 'get_time', arguments: '{}' }),
      0,
    );
    log.apply(
      event('response.done', {
        response: {
          status: 'completed',
          output: [{ type: 'function_call', call_id: 'call_1', name: 'get_time', arguments: '{}' }],
        },
      }),
      0,
    );
    log.noteToolResult('call_1', '{"time":"noon"}');
    expect(log.entries).toEqual([
      { kind: 'tool', callId: 'call_1', name: 'get_time', arguments: '{}', result: '{"time":"noon"}' },
    ]);
  });

  it('marks the reply in progress as interrupted when its audio is cleared or it is cancelled, once', () => {
    const log = new VoiceLog();
    log.apply(event('response.output_audio_transcript.delta', { item_id: 'item_2', delta: 'A long' }), 0);
    log.apply(event('output_audio_buffer.cleared', { response_id: 'resp_1' }), 0);
    log.apply(event('response.done', { response: { status: 'cancelled', output: [] } }), 0);
    expect(log.entries).toEqual([
      { kind: 'assistant', itemId: 'item_2', text: 'A long', done: true, interrupted: true },
      { kind: 'note', text: 'Assistant interrupted.' },
    ]);
  });

  it('shows errors as the server sent them, and a failed reply’s reason', () => {
    const log = new VoiceLog();
    log.apply(
      event('error', { error: { type: 'invalid_request_error', message: 'Unknown event type: nope.', code: null } }),
      0,
    );
    log.apply(
      event('response.done', {
        response: {
          status: 'failed',
          output: [],
          status_details: { type: 'failed', error: { type: 'server_error', code: 'model_not_found' } },
        },
      }),
      0,
    );
    log.apply(
      event('conversation.item.input_audio_transcription.failed', {
        item_id: 'item_3',
        error: { message: 'No audio.' },
      }),
      0,
    );
    expect(log.entries).toEqual([
      { kind: 'error', message: 'Unknown event type: nope.' },
      { kind: 'error', message: 'The reply failed: model_not_found' },
      { kind: 'user', itemId: 'item_3', text: '(not transcribed: No audio.)', done: true },
    ]);
  });

  it('notes a cancel that crossed the reply’s end, which is no error', () => {
    const log = new VoiceLog();
    log.apply(event('response.output_audio_transcript.done', { item_id: 'item_2', transcript: 'Hi.' }), 0);
    log.apply(
      event('error', {
        error: {
          type: 'invalid_request_error',
          code: 'response_cancel_not_active',
          message: 'Cancellation failed: no active response found.',
        },
      }),
      0,
    );
    expect(log.entries).toEqual([
      { kind: 'assistant', itemId: 'item_2', text: 'Hi.', done: true },
      { kind: 'note', text: 'The reply had already ended.' },
    ]);
  });

  it('keeps typed messages in order with the rest', () => {
    const log = new VoiceLog();
    log.noteTyped('What time is it?');
    log.apply(event('response.output_text.delta', { item_id: 'item_9', delta: 'Noon' }), 0);
    log.apply(event('response.output_text.done', { item_id: 'item_9', text: 'Noon.' }), 0);
    expect(log.entries.map((e) => e.kind)).toEqual(['user', 'assistant']);
    expect(log.entries[0]).toMatchObject({ text: 'What time is it?', typed: true, done: true });
    expect(log.entries[1]).toMatchObject({ text: 'Noon.', done: true });
  });
});
