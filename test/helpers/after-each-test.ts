// Run before each test file (vitest's setupFiles), also when a worker shares its modules from file to
// file: the hooks below are this file's, where one registered by an imported helper would be the first
// importer's only. A test's temp directories go after it, those made to last the file after its last test.
import { afterAll, afterEach } from 'vitest';
import { cleanUpAfterFile, cleanUpAfterTest } from './temp-store.js';

afterEach(cleanUpAfterTest);
afterAll(cleanUpAfterFile);
