import { OWNER_SCOPE } from "@almanac/memory-files";
import type { FastifyInstance } from "fastify";
import { isVisibleImage } from "../attachments/detect-type.js";
import { readWorkspaceFile, type WorkspaceFile } from "../attachments/workspace-file.js";

/** What the file routes need. */
export interface FileRoutesDependencies {
  /** The workspace folder paths are relative to. */
  readonly workspace: string;
  /** Largest file served, in bytes (`ALMANAC_ATTACHMENT_MAX_MB`). */
  readonly maxBytes: number;
}

const contentQuery = {
  type: "object",
  required: ["path"],
  properties: {
    path: {
      type: "string",
      minLength: 1,
      maxLength: 1024,
      description: "Workspace-relative path, e.g. `inbox/2026-12-06/cat.png`",
    },
  },
} as const;

/**
 * How a file is served: an image a browser draws (a raster type read from the bytes) inline, everything else as
 * a download (`attachment`), text as plain text and a type not accepted as bytes. Never HTML or SVG inline: a page
 * of the server's origin could run script with the console's token in reach.
 */
function presentationOf(file: WorkspaceFile): {
  readonly contentType: string;
  readonly inline: boolean;
} {
  if (!file.type.accepted) return { contentType: "application/octet-stream", inline: false };
  const { mime, category } = file.type.type;
  if (category === "text") return { contentType: "text/plain; charset=utf-8", inline: false };
  return { contentType: mime, inline: category === "image" && isVisibleImage(mime) };
}

/**
 * A `Content-Disposition` naming the file safely: an ASCII fallback without quotes, backslashes or control
 * characters, and the exact name percent-encoded as UTF-8 (RFC 6266).
 */
function contentDisposition(kind: "inline" | "attachment", name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\]/g, "_").trim() || "file";
  const encoded = encodeURIComponent(name).replace(
    /['()*]/g,
    (character) => `%${character.charCodeAt(0).toString(16).toUpperCase()}`,
  );
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encoded}`;
}

/**
 * `GET /api/files/content?path=`: a workspace file's bytes, for the console to show what people and the assistant
 * sent (fetched with the admin token like every `/api` route; never a link the browser follows on its own). The
 * path is confined to the workspace by the rule `send_file` follows, with the owner's reach.
 */
export function registerFileRoutes(app: FastifyInstance, deps: FileRoutesDependencies): void {
  app.get<{ Querystring: { readonly path: string } }>(
    "/api/files/content",
    {
      schema: {
        tags: ["admin"],
        summary: "A workspace file's bytes (images inline, everything else as a download)",
        description:
          "The type is read from the content: raster images are sent inline, text as `text/plain`, every other " +
          "file as an attachment (`application/octet-stream` for a type the inbox would refuse). Paths out of the " +
          "workspace are refused (`403 workspace.path_outside`); files over `ALMANAC_ATTACHMENT_MAX_MB` get " +
          "`413 file.too_large`. See docs/api.md.",
        querystring: contentQuery,
      },
    },
    async (request, reply) => {
      const file = await readWorkspaceFile(deps.workspace, OWNER_SCOPE, request.query.path, deps.maxBytes);
      const { contentType, inline } = presentationOf(file);
      return reply
        .header("content-type", contentType)
        .header("content-disposition", contentDisposition(inline ? "inline" : "attachment", file.name))
        .header("x-content-type-options", "nosniff")
        .header("cache-control", "private, no-store")
        .send(file.bytes);
    },
  );
}
