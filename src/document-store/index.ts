/**
 * Storage of the Files and Vector Stores APIs: the table interface, and the memory and IndexedDB storages. The
 * directory storage (Node only: it uses node:fs) is `./directory-document-storage.ts`, imported by Node entry points
 * alone, so that it never reaches a browser bundle.
 */
export { DOCUMENT_TABLES, type DocumentStorage, type DocumentTable, type RecordKey } from './document-storage.ts';
export { memoryDocumentStorage } from './memory-document-storage.ts';
export { DOCUMENTS_DATABASE, indexedDbDocumentStorage } from './indexeddb-document-storage.ts';
