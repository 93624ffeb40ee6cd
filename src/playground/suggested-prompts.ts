/**
 * What the chat tab offers a newcomer to send first: everyday prompts that every bundled chat model answers in fluent
 * text, a greeting, a short story, a simple question and counting (test/first-prompts.test.ts holds each bundled
 * model to it), and that a real model answers as well.
 */
export const SUGGESTED_PROMPTS = [
  'Hello',
  'Tell me a story.',
  'What is the capital of France?',
  'Count to 10.',
] as const;
