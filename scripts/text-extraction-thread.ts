/**
 * The worker thread of scripts/text-extraction.ts: reads files' text (pdf.js, the HTML and JSON readers), one file at a
 * time, and posts each result or error back with its id.
 */
import { parentPort } from 'node:worker_threads';
import { extractText } from '../src/documents/index.ts';
import type { ExtractionReply, ExtractionRequest } from './text-extraction.ts';

parentPort!.on('message', async ({ id, bytes, filename, mimeType, timeLimitMs }: ExtractionRequest) => {
  let reply: ExtractionReply;
  try {
    reply = { id, extracted: await extractText(bytes, filename, mimeType, { timeLimitMs }) };
  } catch (error) {
    const { name, message } = error instanceof Error ? error : new Error(String(error));
    reply = { id, error: { name, message } };
  }
  parentPort!.postMessage(reply);
});
