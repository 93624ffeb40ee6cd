import type { Context, MiddlewareHandler } from 'hono';
import type { FilePurpose } from '../../file-search/index.ts';
import { invalidRequest, toApiError } from '../errors.ts';
import type { BodyLimits } from '../middleware/rate-limit.ts';
import { readBody } from '../request-body.ts';
import { readListQuery } from '../list-query.ts';
import { formText, readForm } from '../multipart.ts';
import type { Env, RouteDeps } from '../route-deps.ts';
import type { FileDeleted, FileObject, ListPage } from './wire.ts';

/**
 * The purposes an upload may have here: those of `file_search` and of files given to models, and `batch` (a Batch API
 * input, kept but never indexed). `batch_output` files are the Batch API's own, written by it alone, as OpenAI's.
 */
const PURPOSES: readonly FilePurpose[] = ['assistants', 'user_data', 'batch'];

/** As OpenAI's: a `batch` file given no `expires_after` expires 30 days after its upload. */
const BATCH_FILE_EXPIRY_S = 2_592_000;

/** OpenAI's bounds of `expires_after[seconds]`: an hour to thirty days. */
const EXPIRY_SECONDS = { min: 3600, max: 2_592_000 };

/**
 * `POST /v1/files`: stores an uploaded file (`file`, `purpose`, optionally `expires_after[anchor]=created_at` and
 * `expires_after[seconds]`) on the caller key's shelf. The file's size and the key's storage are checked before
 * anything is stored (413 naming the limit).
 */
export function createFile({ files }: RouteDeps) {
  return async (c: Context<Env>) => {
    const form = await readForm(c.req.raw, c.get('body'), 'File uploads');
    const file = form.get('file');
    if (file === null) throw invalidRequest("Missing required parameter: 'file'.", 'file');
    if (typeof file === 'string') {
      throw invalidRequest("'file' must be a file (a form field with a file name), not text.", 'file');
    }
    const purpose = formText(form, 'purpose');
    if (!purpose) throw invalidRequest("Missing required parameter: 'purpose'.", 'purpose');
    if (!(PURPOSES as readonly string[]).includes(purpose)) {
      throw invalidRequest(
        `Invalid 'purpose' \`${purpose}\`: files here are for ${PURPOSES.join(', ')} (file_search, input files and ` +
          'the Batch API); fine-tuning and evals do not run on the device.',
        'purpose',
      );
    }
    const anchor = formText(form, 'expires_after[anchor]');
    const secondsText = formText(form, 'expires_after[seconds]');
    let expiresAfterS: number | undefined;
    if (anchor !== undefined || secondsText !== undefined) {
      if (anchor !== 'created_at') {
        throw invalidRequest("Invalid 'expires_after[anchor]': expected `created_at`.", 'expires_after.anchor');
      }
      expiresAfterS = Number(secondsText);
      if (
        !Number.isInteger(expiresAfterS) ||
        expiresAfterS < EXPIRY_SECONDS.min ||
        expiresAfterS > EXPIRY_SECONDS.max
      ) {
        throw invalidRequest(
          `Invalid 'expires_after[seconds]': expected an integer from ${EXPIRY_SECONDS.min} (an hour) to ` +
            `${EXPIRY_SECONDS.max} (30 days), but got \`${secondsText}\`.`,
          'expires_after.seconds',
        );
      }
    }
    if (purpose === 'batch' && expiresAfterS === undefined) expiresAfterS = BATCH_FILE_EXPIRY_S;
    const stored = await files.createFile(c.get('key').id, {
      bytes: new Uint8Array(await file.arrayBuffer()),
      filename: file.name || 'upload',
      mimeType: file.type,
      purpose: purpose as FilePurpose,
      ...(expiresAfterS !== undefined && { expiresAfterS }),
    });
    return c.json<FileObject>(stored);
  };
}

/**
 * Reads an upload's body as {@link readBodyOf} does, within `body`'s size and deadline, and under its key's bytes in
 * flight (`files.uploadLease`: 429 as soon as the key's uploads arriving together pass it), held until the route has
 * answered.
 */
export function readUpload({ files }: RouteDeps, body: BodyLimits): MiddlewareHandler<Env> {
  return async (c, next) => {
    const lease = files.uploadLease(c.get('key').id);
    try {
      c.set(
        'body',
        await readBody(c.req.raw, body.maxBytes, body.timeoutMs, (size) => {
          try {
            lease.received(size);
          } catch (error) {
            throw toApiError(error);
          }
        }),
      );
      await next();
    } finally {
      lease.release();
    }
  };
}

/** `GET /v1/files`: the key's files, newest first, `purpose` filtering them. */
export function listFiles({ files }: RouteDeps) {
  return async (c: Context<Env>) => {
    const query = readListQuery(c.req.url, { defaultLimit: 10_000, maxLimit: 10_000 });
    const purpose = c.req.query('purpose') || undefined;
    return c.json<ListPage<FileObject>>(await files.listFiles(c.get('key').id, { ...query, purpose }));
  };
}

/** `GET /v1/files/{id}`. */
export function retrieveFile({ files }: RouteDeps) {
  return async (c: Context<Env>) => c.json<FileObject>(await files.retrieveFile(c.get('key').id, c.req.param('id')!));
}

/**
 * `GET /v1/files/{id}/content`: the bytes as uploaded, with their media type, as an attachment that a browser neither
 * sniffs nor runs: an uploaded `text/html` or SVG opened from this origin would otherwise run its scripts here, with
 * every key the origin's storage holds (`nosniff`, and a sandbox that allows nothing).
 */
export function fileContent({ files }: RouteDeps) {
  return async (c: Context<Env>) => {
    const { bytes, mimeType, file } = await files.fileContent(c.get('key').id, c.req.param('id')!);
    return new Response(bytes as Uint8Array<ArrayBuffer>, {
      headers: {
        'content-type': mimeType || 'application/octet-stream',
        'content-disposition': `attachment; filename*=UTF-8''${encodeURIComponent(file.filename)}`,
        'x-content-type-options': 'nosniff',
        'content-security-policy': "default-src 'none'; sandbox",
      },
    });
  };
}

/** `DELETE /v1/files/{id}`: the file, and its place in every vector store of the key. */
export function deleteFile({ files }: RouteDeps) {
  return async (c: Context<Env>) => c.json<FileDeleted>(await files.deleteFile(c.get('key').id, c.req.param('id')!));
}
