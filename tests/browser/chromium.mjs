// Debian's Chromium (or $CHROMIUM), headless, in a fresh profile, as every browser test
// here launches it through playwright-core. Playwright's own browser download is never used.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

/** A new persistent context in a profile of its own (`prefix` names its folder), which is
 *  removed when the context closes. */
export async function launch(prefix, viewport) {
  const profile = mkdtempSync(join(tmpdir(), prefix));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
    headless: true,
    viewport,
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  // Chromium may still be writing its profile as the context closes: retried, and never
  // a failure of the test.
  context.on("close", () => {
    try {
      rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    } catch (e) {
      console.error(`could not remove the profile ${profile}: ${e.message}`);
    }
  });
  return context;
}
