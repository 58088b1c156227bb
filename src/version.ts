// The version genjob reports (kept equal to package.json by test/version.test.ts).
export const VERSION = '0.3.0-dev';
