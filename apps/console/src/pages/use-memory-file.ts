import { useEffect, useState } from "preact/hooks";
import { ApiError, api, memoryFilePath } from "../api.js";
import { asRecord, str } from "../read.js";

interface OpenFile {
  readonly path: string;
  /** `null` for a file that does not exist yet (saving creates it). */
  readonly hash: string | null;
  readonly saved: string;
}

type SaveState =
  | { readonly kind: "idle" }
  | { readonly kind: "saving" }
  | { readonly kind: "saved"; readonly changed: boolean; readonly backupPath: string }
  | { readonly kind: "conflict" | "shrink" | "failed"; readonly error: unknown };

/** The memory file open in the editor: what is on disk, the text being edited, and how its last save went. */
export interface MemoryFile {
  /** Undefined while it loads, or when it could not be read. */
  readonly open: OpenFile | undefined;
  readonly text: string;
  readonly loadError: unknown;
  readonly save: SaveState;
  /** The text differs from what was read or last saved. */
  readonly dirty: boolean;
  setText(text: string): void;
  /** Saves the text; `allowShrink` after the server refused a save that removes most of the file. */
  write(allowShrink: boolean): Promise<void>;
  /** Reads the file again, dropping the edits (after a conflict). */
  reloadFromDisk(): Promise<void>;
  /** The files changed on disk (a forget, a consolidation): the open file is read again. */
  changedOnDisk(): void;
}

/**
 * Opens the memory file `selected` for editing and saves it, optimistically via the file's hash (a file changed
 * on disk since it was read is a conflict). `onSaved` runs after each save (the file list is read again).
 */
export function useMemoryFile(selected: string | undefined, onSaved: () => void): MemoryFile {
  const [open, setOpen] = useState<OpenFile>();
  const [text, setText] = useState("");
  const [loadError, setLoadError] = useState<unknown>();
  const [save, setSave] = useState<SaveState>({ kind: "idle" });
  // Bumped when the files changed on disk (a forget, a consolidation): the open file is read again.
  const [revision, setRevision] = useState(0);

  useEffect(() => {
    if (selected === undefined) return;
    let current = true;
    setLoadError(undefined);
    setSave({ kind: "idle" });
    // The file comes from the URL (`?file=`), so from any link: a path that would leave the memory API is
    // refused here, before any request, and nothing of the previous file stays on screen.
    let url: string;
    try {
      url = memoryFilePath(selected);
    } catch (error) {
      setOpen(undefined);
      setLoadError(error);
      return;
    }
    api(url).then(
      (body) => {
        if (!current) return;
        const file = asRecord(body);
        setOpen({ path: str(file.path, selected), hash: str(file.hash), saved: str(file.content) });
        setText(str(file.content));
      },
      (error: unknown) => {
        if (!current) return;
        // A missing file opens empty; saving creates it (expectedHash null: "must not exist yet").
        if (error instanceof ApiError && error.code === "memory.not_found") {
          setOpen({ path: selected, hash: null, saved: "" });
          setText("");
        } else {
          setOpen(undefined);
          setLoadError(error);
        }
      },
    );
    return () => {
      current = false;
    };
  }, [selected, revision]);

  const write = async (allowShrink: boolean) => {
    if (!open) return;
    setSave({ kind: "saving" });
    try {
      const body = asRecord(
        await api(memoryFilePath(open.path), {
          method: "PUT",
          body: { content: text, expectedHash: open.hash, ...(allowShrink ? { allowShrink: true } : {}) },
        }),
      );
      setOpen({ path: open.path, hash: str(body.hash), saved: text });
      setSave({ kind: "saved", changed: body.changed === true, backupPath: str(body.backupPath) });
      onSaved();
    } catch (error) {
      const code = error instanceof ApiError ? error.code : "";
      const kind =
        code === "memory.conflict" ? "conflict" : code === "memory.shrink_refused" ? "shrink" : "failed";
      setSave({ kind, error });
    }
  };

  const reloadFromDisk = async () => {
    if (!open) return;
    const file = asRecord(await api(memoryFilePath(open.path)));
    setOpen({ path: open.path, hash: str(file.hash), saved: str(file.content) });
    setText(str(file.content));
    setSave({ kind: "idle" });
  };

  const dirty = open !== undefined && text !== open.saved;
  return {
    open,
    text,
    loadError,
    save,
    dirty,
    setText,
    write,
    reloadFromDisk,
    changedOnDisk() {
      // Unsaved edits stay on screen: saving them then meets the changed file as a conflict, and says so.
      if (!dirty) setRevision((value) => value + 1);
    },
  };
}
