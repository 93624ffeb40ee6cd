import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ReplyParser, type ReplyEvent } from './reply-parser.ts';
import { HERMES, LLAMA3_JSON, type ToolCallSyntax } from './tool-call-syntax.ts';

const names = new Set(['get_weather', 'get_time']);

/** Parses `pieces` in order; returns the events merged per kind, as a client would accumulate them. */
function parse(pieces: string[], syntax: ToolCallSyntax = HERMES, maxCalls?: number) {
  const parser = new ReplyParser(syntax, { names, ...(maxCalls !== undefined && { maxCalls }) });
  const events: ReplyEvent[] = [];
  for (const piece of pieces) events.push(...parser.push(piece));
  events.push(...parser.end());
  const calls: { name: string; arguments: string }[] = [];
  let text = '';
  for (const event of events) {
    if (event.type === 'text') text += event.text;
    else if (event.type === 'call') calls[event.index] = { name: event.name, arguments: '' };
    else calls[event.index]!.arguments += event.text;
  }
  expect(calls).toEqual(parser.calls); // the stream and the result agree
  expect(text).toBe(parser.text);
  return { text, calls, events, done: parser.done };
}

const chars = (s: string) => [...s];
const call = (name: string, args: string) => `<tool_call>\n{"name": "${name}", "arguments": ${args}}\n</tool_call>`;

describe('ReplyParser, Hermes syntax', () => {
  it('passes a reply without calls through unchanged, however it is split', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'grapheme' }), fc.array(fc.nat(), { maxLength: 6 }), (text, cuts) => {
        fc.pre(!text.includes('<tool_call>'));
        const points = [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b);
        const pieces = [0, ...points].map((p, i, all) => text.slice(p, all[i + 1] ?? text.length));
        const result = parse(pieces);
        expect(result.text).toBe(text);
        expect(result.calls).toEqual([]);
      }),
    );
  });

  it('reads a call streamed character by character: its start with the name, then the arguments in fragments', () => {
    const { text, calls, events } = parse(chars(call('get_weather', '{"city": "Paris"}')));
    expect(text).toBe('');
    expect(calls).toEqual([{ name: 'get_weather', arguments: '{"city": "Paris"}' }]);
    expect(events[0]).toEqual({ type: 'call', index: 0, name: 'get_weather' });
    expect(events.filter((e) => e.type === 'arguments').length).toBeGreaterThan(5);
  });

  it('reads parallel calls, and text before them without the white space that separates them', () => {
    const reply = `Let me check.\n${call('get_weather', '{"city": "Paris"}')}\n${call('get_time', '{"city": "Oslo"}')}\n`;
    expect(parse([call('get_time', '{"city": "Oslo"}'), '\n\nDone.']).text).toBe('Done.');
    for (const pieces of [[reply], chars(reply)]) {
      expect(parse(pieces)).toMatchObject({
        text: 'Let me check.',
        calls: [
          { name: 'get_weather', arguments: '{"city": "Paris"}' },
          { name: 'get_time', arguments: '{"city": "Oslo"}' },
        ],
      });
    }
  });

  it('reads the same calls and text however the reply is split into tokens', () => {
    const city = fc.constantFrom('Paris', 'Oslo', 'São Paulo', 'a "quoted" }{ city');
    const part = fc.oneof(
      fc.constantFrom('Sure.', ' Checking', '\n', '<tool', '{"name": 1}'),
      city.map((c) => call('get_weather', JSON.stringify({ city: c }))),
    );
    fc.assert(
      fc.property(fc.array(part, { maxLength: 5 }), fc.array(fc.nat(), { maxLength: 8 }), (parts, cuts) => {
        const reply = parts.join('');
        const points = [...new Set(cuts.map((c) => c % (reply.length + 1)))].sort((a, b) => a - b);
        const pieces = [0, ...points].map((p, i, all) => reply.slice(p, all[i + 1] ?? reply.length));
        const whole = parse([reply]);
        const split = parse(pieces);
        expect(split.calls).toEqual(whole.calls);
        expect(split.text).toBe(whole.text);
        expect(whole.calls).toHaveLength(parts.filter((p) => p.startsWith('<tool_call>')).length);
      }),
    );
  });

  it('reads nested arguments with braces and quotes inside strings', () => {
    const args = '{"city": "P{a}r\\"is", "days": [1, {"x": "}"}], "n": -1.5e3, "ok": true, "none": null}';
    const { calls } = parse(chars(call('get_weather', args)));
    expect(calls).toEqual([{ name: 'get_weather', arguments: args }]);
    expect(JSON.parse(calls[0]!.arguments)).toMatchObject({ city: 'P{a}r"is' });
  });

  it('reads a name that comes after the arguments, and a call without arguments as `{}`', () => {
    expect(parse(['<tool_call>\n{"arguments": {"city": "Rome"}, "name": "get_weather"}\n</tool_call>']).calls).toEqual([
      { name: 'get_weather', arguments: '{"city": "Rome"}' },
    ]);
    expect(parse(chars('<tool_call>{"name":"get_time"}</tool_call>')).calls).toEqual([
      { name: 'get_time', arguments: '{}' },
    ]);
  });

  it('gives back as text what is no call: an undeclared name, no JSON object', () => {
    const undeclared = call('launch_rocket', '{}');
    expect(parse(chars(undeclared))).toMatchObject({ text: undeclared, calls: [] });
    const broken = 'Look: <tool_call> not json';
    expect(parse(chars(broken))).toMatchObject({ text: broken, calls: [] });
  });

  it('keeps a call cut short (a token limit) with the arguments it had', () => {
    const { calls } = parse(chars('<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'));
    expect(calls).toEqual([{ name: 'get_weather', arguments: '{"city": "Par' }]);
  });

  it('drops a call cut by the token limit before its name, and gives it back as text when the reply ended there', () => {
    const opening = 'Sure. <tool_call>\n{"name": "get_wea';
    const parser = new ReplyParser(HERMES, { names });
    const events = [...parser.push(opening), ...parser.end(true)];
    expect(events).toEqual([{ type: 'text', text: 'Sure.' }]);
    expect(parser).toMatchObject({ text: 'Sure.', calls: [] });
    expect(parse(chars(opening))).toMatchObject({ text: opening, calls: [] });
  });

  it('reads one call when parallel calls are off, and is done once it is closed', () => {
    const parser = new ReplyParser(HERMES, { names, maxCalls: 1 });
    parser.push(call('get_weather', '{"city": "Paris"}').slice(0, -3));
    expect(parser.done).toBe(false);
    parser.push('ll>');
    expect(parser.done).toBe(true);
    const result = parse(
      [call('get_weather', '{"city": "Paris"}'), '\n', call('get_time', '{"city": "Oslo"}')],
      HERMES,
      1,
    );
    expect(result.calls).toHaveLength(1);
  });
});

describe('ReplyParser, Llama 3 JSON syntax', () => {
  it('reads a reply that is one JSON object as a call, with `parameters` as its arguments', () => {
    const reply = '{"name": "get_weather", "parameters": {"city": "Paris"}}';
    expect(parse(chars(reply), LLAMA3_JSON)).toMatchObject({
      text: '',
      calls: [{ name: 'get_weather', arguments: '{"city": "Paris"}' }],
      done: true,
    });
  });

  it('leaves text, and JSON that names no declared function, as text', () => {
    expect(parse(chars('Hello! {"name": "get_weather"}'), LLAMA3_JSON)).toMatchObject({ calls: [] });
    expect(parse(chars('{"answer": 42}'), LLAMA3_JSON)).toMatchObject({ text: '{"answer": 42}', calls: [] });
  });
});
