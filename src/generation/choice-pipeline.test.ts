import { describe, expect, it } from 'vitest';
import { toolConstraint } from '../../test/support/tools.ts';
import {
  ChatResultBuilder,
  EngineError,
  type ChatEvent,
  type GeneratedTokenLogprob,
} from '../engine-interface/index.ts';
import { HERMES } from '../tools/tool-call-syntax.ts';
import { ChoicePipeline, type ChoicePipelineOptions } from './choice-pipeline.ts';

/*
 * The one pipeline every engine feeds, tested directly: a toy byte-level vocabulary where each token is one byte (so a
 * token can end inside a UTF-8 character), 0 ends a reply, and each token's log probability names it.
 */
const END = 0;
const decoder = new TextDecoder();
const decode = (ids: number[]) => decoder.decode(Uint8Array.from(ids.filter((id) => id !== END)));
const tokensOf = (text: string) => [...new TextEncoder().encode(text)];
const logprob = (id: number): GeneratedTokenLogprob => ({
  token: `#${id}`,
  logprob: -id,
  bytes: [id],
  topLogprobs: [],
});

/** A pipeline fed token by token, as the transformers.js engine feeds it; returns its events and what it said. */
function run(tokens: number[], options: ChoicePipelineOptions = {}) {
  const events: ChatEvent[] = [];
  const pipeline = new ChoicePipeline(0, {
    decode,
    endTokens: new Set([END]),
    logprobs: true,
    onEvent: (e) => events.push(e),
    ...options,
  });
  let over = false;
  let fed = 0;
  for (const token of tokens) {
    fed += 1;
    if ((over = pipeline.pushToken(token, logprob(token)))) break;
  }
  if (!over) pipeline.end('length');
  const results = new ChatResultBuilder({ choices: 1, logprobs: true });
  events.forEach((e) => results.add(e));
  return { events, fed, pipeline, choice: results.result({ promptTokens: 0, completionTokens: 0 }).choices[0]! };
}

describe('ChoicePipeline', () => {
  it('holds a token that ends inside a character until the character is whole, its log probability with it', () => {
    const { events, choice } = run([...tokensOf('é!'), END]);
    const deltas = events.filter((e) => e.type === 'delta');
    // 'é' is two bytes: nothing goes out after the first, both log probabilities go with the character.
    expect(deltas.map((d) => d.text)).toEqual(['é', '!']);
    expect(deltas.map((d) => d.logprobs!.map((l) => l.token))).toEqual([['#195', '#169'], ['#33']]);
    // The end token has no text and no log probability; the finish is the last event.
    expect(choice).toEqual({ text: 'é!', finishReason: 'stop', logprobs: [195, 169, 33].map(logprob) });
    expect(events.at(-1)).toEqual({ type: 'finish', choice: 0, reason: 'stop' });
  });

  it('matches a stop sequence across tokens, never letting any of it out, and stops there', () => {
    const { events, fed, choice } = run(tokensOf('Hi!\n\nUser: more'), { stop: ['\n\nUser:'] });
    expect(choice).toMatchObject({ text: 'Hi!', finishReason: 'stop' });
    expect(events.filter((e) => e.type === 'delta').map((d) => d.text)).toEqual(['H', 'i', '!']);
    expect(fed).toBe('Hi!\n\nUser:'.length); // it said "over" at the stop sequence's last token
  });

  it('releases at the end, in order, what it held: the unfinished character, then a stop sequence that was not', () => {
    // Ends at the token limit with '\n' held (it may begin the stop sequence) and half of 'é' held by the decoder.
    const { choice } = run([...tokensOf('ok\n'), 195], { stop: ['\n\n'], maxTokens: 4 });
    expect(choice).toMatchObject({ text: 'ok\n\uFFFD', finishReason: 'length' });
    const events: ChatEvent[] = [];
    const pipeline = new ChoicePipeline(0, { stop: ['END'], onEvent: (e) => events.push(e) });
    pipeline.pushText('doneEN');
    pipeline.end('length');
    expect(events.map((e) => (e.type === 'delta' ? e.text : e.type))).toEqual(['done', 'EN', 'finish']);
  });

  it('stops at a stop sequence completed by the next piece, whatever the engine meant to say after it', () => {
    const pipeline = new ChoicePipeline(0, { stop: ['END'] });
    expect(pipeline.pushText('done E')).toBe(false);
    expect(pipeline.pushText('N')).toBe(false);
    expect(pipeline.pushText('D and more')).toBe(true);
    expect([pipeline.text, pipeline.finishReason]).toEqual(['done ', 'stop']);
  });

  it('ends at its token limit, counting the tokens it was fed', () => {
    const { choice, pipeline, fed } = run(tokensOf('abcdef'), { maxTokens: 3 });
    expect(choice).toMatchObject({ text: 'abc', finishReason: 'length' });
    expect([fed, pipeline.tokens]).toEqual([3, 3]);
  });

  it('reads tool calls, reports no log probability for their tokens, and stops once every call it may make is made', () => {
    const calls = { syntax: HERMES, names: new Set(['get_weather']), maxCalls: 1 };
    const reply = 'Checking.\n<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>\nmore';
    const { events, fed, choice } = run(tokensOf(reply), { calls });
    expect(fed).toBe(reply.indexOf('</tool_call>') + '</tool_call>'.length); // done: generation may stop
    expect(choice).toMatchObject({
      text: 'Checking.',
      toolCalls: [{ name: 'get_weather', arguments: '{"city": "Oslo"}' }],
      finishReason: 'tool_calls',
    });
    expect(choice.logprobs!.map((l) => l.bytes[0])).toEqual(tokensOf('Checking.'));
    expect(events.filter((e) => e.type === 'tool_call')).toEqual([
      { type: 'tool_call', choice: 0, index: 0, name: 'get_weather' },
    ]);
  });

  it('checks the end against the constraint: an invalid answer that ended on its own is an error, never a stop', () => {
    const constraint = { type: 'json' as const, schema: { type: 'object', required: ['a'] } };
    expect(run([...tokensOf('{"a":1}'), END], { constraint }).choice).toMatchObject({ finishReason: 'stop' });
    let error: unknown;
    try {
      run([...tokensOf('{"b":1}'), END], { constraint });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(EngineError);
    expect(error).toMatchObject({
      kind: 'invalid_output',
      message: expect.stringMatching(/does not match the schema/),
    });
    // Cut by its token limit, it is reported as cut: `length`, not checked.
    expect(run(tokensOf('{"b":1}'), { constraint, maxTokens: 3 }).choice).toMatchObject({ finishReason: 'length' });
    // A tool constraint that requires a call refuses a reply in words.
    const required = toolConstraint([{ name: 'get_weather', parameters: { type: 'object' } }], { choice: 'required' });
    const calls = { syntax: HERMES, names: new Set(['get_weather']) };
    expect(() => run([...tokensOf('Hello'), END], { constraint: required, calls })).toThrow(/no tool call/);
  });

  it('takes text from engines that decode themselves, with the log probabilities of the tokens it holds', () => {
    const events: ChatEvent[] = [];
    const pipeline = new ChoicePipeline(0, { logprobs: true, stop: ['!'], onEvent: (e) => events.push(e) });
    expect(pipeline.pushText('', [logprob(1)])).toBe(false); // a token that made no text yet
    expect(pipeline.pushText('Hi', [logprob(2)])).toBe(false);
    expect(pipeline.pushText('!?', [logprob(3)])).toBe(true);
    pipeline.end('stop'); // nothing: it has ended
    expect(events).toEqual([
      { type: 'delta', choice: 0, text: 'Hi', logprobs: [logprob(1), logprob(2)] },
      { type: 'finish', choice: 0, reason: 'stop' },
    ]);
  });
});

describe('ChoicePipeline with a thought', () => {
  it('reports the thought as reasoning, and applies stop sequences and log probabilities to the answer only', () => {
    const reply = '<think>\nStop here? No.\n</think>\n\nYes. Stop here.';
    const { events, choice, pipeline } = run([...tokensOf(reply), END], { reasoning: true, stop: ['Stop'] });
    expect(choice.reasoning).toBe('Stop here? No.');
    expect(choice.text).toBe('Yes. ');
    expect(choice.finishReason).toBe('stop');
    // Reasoning comes before any text, and only the answer's tokens carry log probabilities.
    const first = events.findIndex((e) => e.type === 'delta');
    expect(events.slice(0, first).every((e) => e.type === 'reasoning')).toBe(true);
    expect(choice.logprobs!.map((l) => l.token).join('')).toBe([...tokensOf('Yes. ')].map((b) => `#${b}`).join(''));
    // Every token up to and including the thought's closing tag is a reasoning token.
    expect(pipeline.reasoningTokens).toBe('<think>\nStop here? No.\n</think>'.length);
  });

  it('checks the constraint against the answer, not the thought', () => {
    const constraint = { type: 'json' as const, schema: { type: 'object' } };
    const reply = '<think>\nThe user wants JSON: {not json\n</think>\n\n{"a":1}';
    const { choice } = run([...tokensOf(reply), END], { reasoning: true, constraint });
    expect(choice).toMatchObject({
      text: '{"a":1}',
      reasoning: 'The user wants JSON: {not json',
      finishReason: 'stop',
    });
  });

  it('reads calls in the answer only', () => {
    const calls = { syntax: HERMES, names: new Set(['get_weather']) };
    const call = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>';
    const reply = `<think>\nI could write <tool_call> here.\n</think>\n\n${call}`;
    const { choice } = run([...tokensOf(reply), END], { reasoning: true, calls });
    expect(choice.reasoning).toBe('I could write <tool_call> here.');
    expect(choice.toolCalls).toEqual([{ name: 'get_weather', arguments: '{"city": "Paris"}' }]);
    expect(choice.finishReason).toBe('tool_calls');
  });
});
