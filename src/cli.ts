/** The command line: `npm run cli -- --help`. Administration tasks that run beside the server. */
import { runCli } from "./protected-areas/cli.js";

const controller = new AbortController();
const interrupt = () => controller.abort();
process.once("SIGINT", interrupt);
process.once("SIGTERM", interrupt);

runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, signal: controller.signal })
  .then((code) => {
    process.exitCode = code;
  })
  .catch((error: unknown) => {
    process.stderr.write(
      `unexpected failure: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`,
    );
    process.exitCode = 2;
  })
  .finally(() => {
    process.off("SIGINT", interrupt);
    process.off("SIGTERM", interrupt);
  });
