/** A command line the CLI cannot run as given: printed with a hint, exit code 2. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}
