// Run before each test file (vitest's setupFiles), also when a worker shares its modules from file to
// file: the hook below is this file's, where one registered by an imported helper would be the first
// importer's only.
import { afterEach } from 'vitest';
import { cleanUpAfterTest } from './temp-store.js';

afterEach(cleanUpAfterTest);
