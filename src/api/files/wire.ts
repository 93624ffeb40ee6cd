/** The Files API's wire types, as openai-node's `OpenAI.Files` holds them (the library keeps its records in them). */
export type { FileDeleted, FileObject, FilePurpose, ListPage } from '../../file-search/index.ts';
