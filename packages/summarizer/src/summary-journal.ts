import { mkdir, readdir, readFile, rename, unlink } from "node:fs/promises";
import * as path from "node:path";
import { describeError, errnoCode, InternalError, type Logger } from "@almanac/core";
import { fsyncDirectory, PRIVATE_DIRECTORY_MODE, writeFileDurably } from "@almanac/durable-write";
import { type JournalRecord, journalRecordSchema } from "./summary-job.js";

/** The on-disk job journal: one JSON file per job in `<stateDir>/summarizer/jobs/`. */
export interface SummaryJournal {
  /** Creates the directories (durably) once. */
  init(): Promise<void>;
  /** Every valid record, by sequence. Damaged files are moved to `summarizer/damaged/` and logged. */
  loadAll(): Promise<JournalRecord[]>;
  /** Reads and validates one record; a damaged file is `InternalError` `summarizer.journal_damaged`. */
  read(id: string): Promise<JournalRecord>;
  /** Replaces a record atomically and durably (temp, fsync, rename, directory fsync). */
  write(record: JournalRecord): Promise<void>;
  remove(id: string): Promise<void>;
}

const fileNamePattern = /^\d{12}-[0-9a-f]{8}\.json$/;

function parseRecord(text: string, file: string): JournalRecord {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new InternalError("summarizer.journal_damaged", `Job journal file ${file} is not valid JSON.`, {
      cause: error,
    });
  }
  const parsed = journalRecordSchema.safeParse(json);
  if (!parsed.success) {
    throw new InternalError(
      "summarizer.journal_damaged",
      `Job journal file ${file} does not match the job schema.`,
      {
        cause: parsed.error,
      },
    );
  }
  if (`${parsed.data.id}.json` !== path.basename(file)) {
    throw new InternalError(
      "summarizer.journal_damaged",
      `Job journal file ${file} holds job ${parsed.data.id}.`,
    );
  }
  return parsed.data;
}

/** Creates the journal over `<stateDir>/summarizer/`. */
export function createSummaryJournal(stateDir: string, logger: Logger): SummaryJournal {
  const root = path.join(stateDir, "summarizer");
  const jobsDir = path.join(root, "jobs");
  const damagedDir = path.join(root, "damaged");
  const fileOf = (id: string) => path.join(jobsDir, `${id}.json`);
  let ready: Promise<void> | undefined;

  return {
    init() {
      ready ??= (async () => {
        await mkdir(jobsDir, { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
        await fsyncDirectory(root);
        await fsyncDirectory(stateDir);
      })();
      return ready;
    },

    async loadAll() {
      const names = (await readdir(jobsDir)).filter((name) => fileNamePattern.test(name)).sort();
      const records: JournalRecord[] = [];
      for (const name of names) {
        const file = path.join(jobsDir, name);
        try {
          records.push(parseRecord(await readFile(file, "utf8"), file));
        } catch (error) {
          if (errnoCode(error) === "ENOENT") continue;
          // Never dropped silently: kept aside for a person to inspect, and logged loudly.
          await mkdir(damagedDir, { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
          await rename(file, path.join(damagedDir, name));
          logger.error({ file: name, error: describeError(error) }, "damaged job journal file moved aside");
        }
      }
      return records.sort((left, right) => left.seq - right.seq);
    },

    async read(id) {
      const file = fileOf(id);
      return parseRecord(await readFile(file, "utf8"), file);
    },

    async write(record) {
      await writeFileDurably(fileOf(record.id), `${JSON.stringify(record)}\n`);
    },

    async remove(id) {
      try {
        await unlink(fileOf(id));
      } catch (error) {
        if (errnoCode(error) !== "ENOENT") throw error;
      }
    },
  };
}
