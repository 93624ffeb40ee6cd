/**
 * What the chat tab offers a newcomer to send first: everyday prompts that every bundled chat model answers in fluent
 * text (a greeting, a short story, a simple question, counting, a list and a sum: test/first-prompts.test.ts holds each
 * bundled model to it), and that a real model answers as well. Only what the tiny models were taught: anything else
 * shows them at their worst.
 */
export const SUGGESTED_PROMPTS = [
  'Hello',
  'Tell me a story.',
  'What is the capital of France?',
  'Count to 10.',
  'Name three fruits.',
  'What is 3 + 4?',
] as const;
