/** A size in a limit's message: KB under a mebibyte, MB with one decimal from there (`5 KB`, `20.0 MB`). */
export const byteSize = (bytes: number): string =>
  bytes < 1024 * 1024 ? `${Math.ceil(bytes / 1024)} KB` : `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
