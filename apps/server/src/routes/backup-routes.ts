import type { FastifyInstance } from "fastify";
import type { BackupStore } from "../backup/backup-store.js";

/** The `{name}` of a backup route, as the router matched it (checked against the store's one name pattern). */
function nameParam(params: unknown): string {
  const name = (params as { name?: unknown } | undefined)?.name;
  return typeof name === "string" ? name : "";
}

/**
 * `/api/backups`: make an archive of the data directory while the server runs, list the archives, download
 * one, delete one (docs/backup.md). Archives hold every secret of the data directory (the admin token, every
 * transcript): like every `/api` route these need the admin token.
 */
export function registerBackupRoutes(app: FastifyInstance, backups: BackupStore): void {
  app.post(
    "/api/backups",
    {
      schema: {
        tags: ["admin"],
        summary: "Make an archive of the data directory now (consistent while the server runs)",
      },
    },
    async (_request, reply) => reply.status(201).send(await backups.create()),
  );

  app.get(
    "/api/backups",
    { schema: { tags: ["admin"], summary: "The archives in <home>/backups/, newest first" } },
    async () => ({ backups: await backups.list() }),
  );

  app.get(
    "/api/backups/:name",
    { schema: { tags: ["admin"], summary: "Download an archive (application/gzip)" } },
    async (request, reply) => {
      const name = nameParam(request.params);
      const { handle, size } = await backups.open(name);
      return reply
        .type("application/gzip")
        .header("content-length", size)
        .header("content-disposition", `attachment; filename="${name}"`)
        .send(handle.createReadStream());
    },
  );

  app.delete(
    "/api/backups/:name",
    { schema: { tags: ["admin"], summary: "Delete an archive" } },
    async (request) => {
      const name = nameParam(request.params);
      await backups.delete(name);
      return { name, deleted: true };
    },
  );

  app.addHook("onClose", async () => {
    await backups.close();
  });
}
