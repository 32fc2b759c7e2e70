/**
 * Ends every `npm test` run with one plain line, `Tests: N passed, N failed, N skipped`, so any CI
 * reading the output (not only vitest-aware ones) can tell how many tests ran. A test file that
 * failed outside its tests (an import error, a failing beforeAll: its tests are then skipped) counts
 * as one failed test, so the line never says 0 failed for a red run.
 */
import type { Reporter, TestModule } from 'vitest/node';

export default class SummaryLineReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    let skipped = 0;
    for (const m of testModules) {
      let failedHere = 0;
      for (const t of m.children.allTests()) {
        const state = t.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failedHere++;
        else skipped++;
      }
      if (failedHere === 0 && m.state() === 'failed') failedHere = 1;
      failed += failedHere;
    }
    process.stdout.write(`\nTests: ${passed} passed, ${failed} failed, ${skipped} skipped\n`);
  }
}
