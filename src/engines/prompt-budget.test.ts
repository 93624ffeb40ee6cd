import { describe, expect, it } from 'vitest';
import { EngineError } from '../engine-interface/index.ts';
import { llamaEmbeddingModel } from './llama-cpp/llama-embedding-model.ts';
import { refuseLongInput } from './prompt-budget.ts';

describe('the embedding input check every engine makes', () => {
  const refused = (check: () => unknown) => {
    try {
      check();
    } catch (error) {
      return error;
    }
    return undefined;
  };

  it('refuses an input over the window, naming it, and passes one that fits exactly', () => {
    expect(refused(() => refuseLongInput(3, 8, 8))).toBeUndefined();
    const error = refused(() => refuseLongInput(3, 9, 8)) as EngineError;
    expect(error).toBeInstanceOf(EngineError);
    expect(error).toMatchObject({ kind: 'context_length_exceeded', param: 'input' });
    expect(error.message).toBe(
      "This model's maximum input length is 8 tokens, but input[3] has 9 tokens. Please shorten or split it.",
    );
  });

  it('is what a llama.cpp embedding model says, counting the BOS and EOS it adds, before it embeds anything', async () => {
    const embedded: number[][] = [];
    const model = llamaEmbeddingModel({
      maxInputTokens: 4,
      tokenize: (text) => [...text].map((c) => c.charCodeAt(0)),
      bos: 1,
      eos: 2,
      embed: async (tokens) => (embedded.push(tokens), [1, 0]),
    });
    await expect(model.embed(['ab', 'abc'])).rejects.toMatchObject({
      kind: 'context_length_exceeded',
      param: 'input',
      message: "This model's maximum input length is 4 tokens, but input[1] has 5 tokens. Please shorten or split it.",
    });
    expect(embedded).toEqual([]);
  });
});
