import { defineConfig } from 'vitest/config';
import preact from '@preact/preset-vite';

/** The Console's component tests (console/test), in happy-dom; `npm test` runs them after the server's. */
export default defineConfig({
  root: import.meta.dirname,
  plugins: [preact()],
  test: {
    environment: 'happy-dom',
    include: ['test/**/*.test.tsx', 'test/**/*.test.ts'],
  },
});
