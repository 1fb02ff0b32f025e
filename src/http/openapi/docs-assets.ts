import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { extname, join } from "node:path";
import type { DocsAssetName } from "./service-paths.js";

/**
 * The files of the /docs page, served from this process (no CDN): Swagger UI's own, read once from
 * the installed swagger-ui-dist, and the page's start-up script. Each is named by its content's
 * hash, so a browser may keep it for good and still gets the new one after an upgrade.
 */

export interface DocsAsset extends DocsAssetName {
  body: Buffer;
  etag: string;
}

const CONTENT_TYPES: Readonly<Record<string, string>> = {
  ".css": "text/css; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".png": "image/png",
};

/** Swagger UI's files the page uses: its styles, its bundle (no standalone preset: no top bar), an icon. */
export const SWAGGER_UI_FILES = ["swagger-ui.css", "index.css", "swagger-ui-bundle.js", "favicon-32x32.png"] as const;

/** swagger-ui-dist's folder; its absolute-path module, not its index, which would evaluate the bundle. */
function swaggerUiFolder(): string {
  const getAbsoluteFSPath = createRequire(import.meta.url)("swagger-ui-dist/absolute-path.js") as () => string;
  return getAbsoluteFSPath();
}

/** A source-map comment names a file that is not served: dropped, so the page references only what is. */
const SOURCE_MAP_COMMENT = /\n?(\/\*# sourceMappingURL=[^*]*\*\/|\/\/# sourceMappingURL=\S*)\s*$/;

/** A short hash of `content`: the part of an asset's name that changes with it, and its ETag. */
export function contentHash(content: Buffer | string): string {
  return createHash("sha256").update(content).digest("base64url").slice(0, 16);
}

export function docsAsset(file: string, content: Buffer): DocsAsset {
  const extension = extname(file);
  const contentType = CONTENT_TYPES[extension];
  if (contentType === undefined) throw new Error(`docs asset ${file}: no content type for ${extension}`);
  const body = extension === ".png" ? content : Buffer.from(content.toString("utf8").replace(SOURCE_MAP_COMMENT, "\n"));
  const hash = contentHash(body);
  return {
    name: `${file.slice(0, -extension.length)}.${hash}${extension}`,
    contentType,
    body,
    etag: `"${hash}"`,
  };
}

type SwaggerUiAssets = ReadonlyMap<(typeof SWAGGER_UI_FILES)[number], DocsAsset>;

/** Read once per process: the installed files do not change while it runs, whatever servers it builds. */
let swaggerUiAssets: SwaggerUiAssets | undefined;

/** Swagger UI's files, as assets: by their file name in swagger-ui-dist. */
export function loadSwaggerUiAssets(): SwaggerUiAssets {
  if (swaggerUiAssets === undefined) {
    const folder = swaggerUiFolder();
    swaggerUiAssets = new Map(
      SWAGGER_UI_FILES.map((file) => [file, docsAsset(file, readFileSync(join(folder, file)))]),
    );
  }
  return swaggerUiAssets;
}
