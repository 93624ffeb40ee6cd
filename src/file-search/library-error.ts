/**
 * A refusal of the Files and Vector Stores library: what the API answers with its status, as an OpenAI-shaped error
 * naming the parameter. (`src/api` maps it; the library knows nothing of HTTP beyond the status it stands for.)
 */
export class LibraryError extends Error {
  override readonly name = 'LibraryError';
  readonly status: 400 | 404 | 413 | 429;
  readonly param: string | null;
  readonly code: string | null;

  constructor(status: 400 | 404 | 413 | 429, message: string, options: { param?: string; code?: string } = {}) {
    super(message);
    this.status = status;
    this.param = options.param ?? null;
    this.code = options.code ?? null;
  }
}

export const notFound = (what: string, id: string, param: string) =>
  new LibraryError(404, `No ${what} found with id '${id}'.`, { param, code: 'not_found' });
