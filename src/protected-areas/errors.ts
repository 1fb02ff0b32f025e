/** A problem with what the user gave (arguments, the input file); reported without a stack trace. */
export class InputError extends Error {
  override name = "InputError";
}

/** The input is not a GeoJSON FeatureCollection (or not JSON at all). */
export class NotFeatureCollectionError extends InputError {
  override name = "NotFeatureCollectionError";
}

/** Another import into the same store is still running. */
export class ImportInProgressError extends InputError {
  override name = "ImportInProgressError";
}

/** The import was interrupted (SIGINT/SIGTERM); the previous layer is kept. */
export class ImportAbortedError extends Error {
  override name = "ImportAbortedError";
}
