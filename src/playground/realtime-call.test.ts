import { describe, expect, it } from 'vitest';
import {
  callIdOf,
  errorMessageOf,
  GET_TIME_TOOL,
  interruptEvents,
  runDemoTool,
  textMessageEvents,
  toolOutputEvents,
  voiceSession,
} from './realtime-call.ts';

describe('the voice tab’s Realtime client: its pure parts', () => {
  it('asks for audio out, a transcript of the user, server VAD, and the tool only when offered', () => {
    const session = voiceSession({ instructions: 'Be brief.', voice: 'marin', tools: [GET_TIME_TOOL] });
    expect(session).toEqual({
      type: 'realtime',
      model: 'gpt-realtime',
      output_modalities: ['audio'],
      instructions: 'Be brief.',
      tools: [GET_TIME_TOOL],
      tool_choice: 'auto',
      audio: {
        input: { transcription: { model: 'whisper-1' }, turn_detection: { type: 'server_vad' } },
        output: { voice: 'marin' },
      },
    });
    const bare = voiceSession({ instructions: '', tools: [] });
    expect(bare).not.toHaveProperty('instructions');
    expect(bare).not.toHaveProperty('tools');
    expect(bare).not.toHaveProperty('tool_choice');
    expect(bare.audio?.output).toEqual({});
  });

  it('answers get_time in the zone asked for, or the device’s, and says what is wrong otherwise', () => {
    const noon = new Date('2026-11-28T12:00:00Z');
    const paris = JSON.parse(runDemoTool('get_time', '{"time_zone":"Europe/Paris"}', noon));
    expect(paris.time_zone).toBe('Europe/Paris');
    expect(paris.time).toContain('13:00:00');
    expect(paris.time).toContain('Saturday');
    expect(JSON.parse(runDemoTool('get_time', '', noon)).time_zone).toBe(
      Intl.DateTimeFormat().resolvedOptions().timeZone,
    );
    expect(JSON.parse(runDemoTool('get_time', '{"time_zone":"Mars/Olympus"}', noon)).error).toBe(
      'Unknown time zone: Mars/Olympus',
    );
    expect(JSON.parse(runDemoTool('get_time', '{not json', noon)).error).toMatch(/not JSON/);
    expect(JSON.parse(runDemoTool('get_weather', '{}', noon)).error).toBe('The page has no tool named get_weather.');
  });

  it('builds the client events: interrupt, a typed message, tool outputs, each followed by the reply it needs', () => {
    expect(interruptEvents(true)).toEqual([{ type: 'response.cancel' }, { type: 'output_audio_buffer.clear' }]);
    expect(interruptEvents(false)).toEqual([{ type: 'output_audio_buffer.clear' }]);
    expect(textMessageEvents('Hi')).toEqual([
      {
        type: 'conversation.item.create',
        item: { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'Hi' }] },
      },
      { type: 'response.create' },
    ]);
    expect(
      toolOutputEvents([
        { callId: 'call_1', output: '{"a":1}' },
        { callId: 'call_2', output: '{}' },
      ]),
    ).toEqual([
      {
        type: 'conversation.item.create',
        item: { type: 'function_call_output', call_id: 'call_1', output: '{"a":1}' },
      },
      { type: 'conversation.item.create', item: { type: 'function_call_output', call_id: 'call_2', output: '{}' } },
      { type: 'response.create' },
    ]);
  });

  it('reads the call’s ID from Location and a refusal’s message from its OpenAI error body', async () => {
    expect(callIdOf('/v1/realtime/calls/rtc_abc')).toBe('rtc_abc');
    expect(callIdOf(null)).toBeUndefined();
    expect(callIdOf('')).toBeUndefined();
    const refusal = Response.json(
      { error: { message: 'Invalid client secret.', type: 'invalid_request_error' } },
      { status: 401 },
    );
    expect(await errorMessageOf(refusal)).toBe('Invalid client secret.');
    expect(await errorMessageOf(new Response('no SDP', { status: 400 }))).toBe('no SDP');
    expect(await errorMessageOf(new Response(null, { status: 502, statusText: 'Bad Gateway' }))).toBe(
      '502 Bad Gateway',
    );
  });
});
