export { DOWNLOADS_CACHE, StoredFiles, type FileRecord, type FileRef } from './stored-files.ts';
export {
  DownloadError,
  downloadFile,
  type DownloadFailure,
  type DownloadOptions,
  type DownloadTarget,
} from './resumable-download.ts';
export { reuseProblem } from './reuse-check.ts';
export {
  ensureStorageFor,
  formatBytes,
  storageEstimate,
  type StorageEstimateInfo,
  type StorageShortfall,
} from './storage-quota.ts';
