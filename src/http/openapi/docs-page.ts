import { contentHash, type DocsAsset, docsAsset, loadSwaggerUiAssets } from "./docs-assets.js";
import { DOCS_ASSETS_PATH, OPENAPI_PATH } from "./service-paths.js";

/**
 * The /docs page: Swagger UI over /openapi.json, every script a file of the page's own (no inline
 * script), so that the Content-Security-Policy below can say `script-src 'self'`.
 */

export interface DocsPage {
  html: string;
  etag: string;
  /** The page's files by their (content-addressed) name. */
  assets: ReadonlyMap<string, DocsAsset>;
}

/**
 * Scripts and styles of this origin only; Swagger UI sets styles from script and draws with data:
 * images; it fetches the description and runs "Try it out" against this origin.
 */
export const DOCS_CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self' 'unsafe-inline'",
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join("; ");

/** Boots Swagger UI; the validator badge would fetch an outside image, so it is off. */
const INIT_SCRIPT = `window.addEventListener("load", function () {
  window.ui = SwaggerUIBundle({
    url: ${JSON.stringify(OPENAPI_PATH)},
    dom_id: "#swagger-ui",
    deepLinking: true,
    presets: [SwaggerUIBundle.presets.apis],
    layout: "BaseLayout",
    validatorUrl: null,
  });
});
`;

const escapeAttribute = (text: string) =>
  text.replaceAll("&", "&amp;").replaceAll('"', "&quot;").replaceAll("<", "&lt;");

export function buildDocsPage(title: string): DocsPage {
  const swaggerUi = loadSwaggerUiAssets();
  const init = docsAsset("init.js", Buffer.from(INIT_SCRIPT));
  const href = (asset: DocsAsset | undefined) => {
    if (asset === undefined) throw new Error("docs page: a Swagger UI file is missing");
    return escapeAttribute(`${DOCS_ASSETS_PATH}/${asset.name}`);
  };
  const html = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeAttribute(title)}</title>
<link rel="stylesheet" href="${href(swaggerUi.get("swagger-ui.css"))}">
<link rel="stylesheet" href="${href(swaggerUi.get("index.css"))}">
<link rel="icon" type="image/png" sizes="32x32" href="${href(swaggerUi.get("favicon-32x32.png"))}">
</head>
<body>
<div id="swagger-ui"></div>
<script src="${href(swaggerUi.get("swagger-ui-bundle.js"))}"></script>
<script src="${href(init)}"></script>
</body>
</html>
`;
  const assets = new Map([...swaggerUi.values(), init].map((asset) => [asset.name, asset]));
  return { html, etag: `"${contentHash(html)}"`, assets };
}
