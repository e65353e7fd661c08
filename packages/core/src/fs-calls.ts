import * as fs from "node:fs";

// The file-system calls of the turn path that must not block (a durable write's open, fsync and rename, a
// directory's fsync, a new transcript's open), as node:fs's callback API behind promises rather than
// node:fs/promises.
// Both run the call in libuv's thread pool; the difference is the main thread's share. Measured on Node 20 with
// 100 calls in flight (a script timing the main thread's CPU over 5,000-20,000 calls): open + close 2-4 µs a
// pair against 14-16 µs through a FileHandle, lstat 4 µs against 7.5-9 µs (Node 24: 6 against 24 µs, 4.5 against
// 9.5 µs). A CPU profile of 100 sessions starting at once had put ~20 % of the main thread in node:fs/promises'
// opens, stats and fsyncs; on the whole server the gain was within the machine's noise (BENCHMARKS.md, "Issue 14,
// eighth pass"). Calls that are cheap in the kernel (a stat of a cached path, a small write into the page cache, a
// close) are made blocking where a turn waits for them: in a profile of 100 sessions starting at once, each
// hand-off to the pool held the main thread 20-35 µs, where a blocking stat took ~10 µs, and it queued behind the
// other sessions' fsyncs (BENCHMARKS.md, "Issue 14, eleventh pass").
// Each call looks its function up on node:fs when made: a test can spy on node:fs's `fsync` (then
// `syncBuiltinESMExports()`).

/** Resolves with the callback's value, or rejects with its error (a Node system error, code and path intact). */
function call<T>(start: (done: (error: NodeJS.ErrnoException | null, value: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => start((error, value) => (error ? reject(error) : resolve(value))));
}

/** Opens `path` and resolves with the file descriptor; the caller closes it with {@link closeFd}. */
export const openFd = (path: string, flags: string, mode?: number): Promise<number> =>
  call((done) => fs.open(path, flags, mode, done));
export const closeFd = (fd: number): Promise<void> =>
  call((done) => fs.close(fd, (error: NodeJS.ErrnoException | null) => done(error, undefined)));
export const fsyncFd = (fd: number): Promise<void> =>
  call((done) => fs.fsync(fd, (error: NodeJS.ErrnoException | null) => done(error, undefined)));
export const fchmodFd = (fd: number, mode: number): Promise<void> =>
  call((done) => fs.fchmod(fd, mode, (error: NodeJS.ErrnoException | null) => done(error, undefined)));
/** Writes all of `data` at the descriptor's current position, through the pool. */
const writeAllToFd = (fd: number, data: string | Uint8Array): Promise<void> =>
  call((done) => fs.writeFile(fd, data, (error: NodeJS.ErrnoException | null) => done(error, undefined)));

/**
 * Data up to this size is written blocking by {@link writeWhole}: into the page cache that costs the main thread
 * a few µs, where a write handed to the pool waits behind every fsync queued before it. Larger data goes through
 * the pool, not to hold up the event loop.
 */
const BLOCKING_WRITE_BYTES = 64 * 1024;

/**
 * Writes all of `data` at the descriptor's position (a new file: from its start; one opened for appending: at its
 * end), blocking up to {@link BLOCKING_WRITE_BYTES} (a turn's transcript lines, a snapshot, a statistics line).
 */
export async function writeWhole(fd: number, data: string | Uint8Array): Promise<void> {
  // A string's UTF-8 is at least as long as its UTF-16 length: a long one is not encoded twice.
  if (data.length > BLOCKING_WRITE_BYTES) return writeAllToFd(fd, data);
  const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
  if (bytes.byteLength > BLOCKING_WRITE_BYTES) return writeAllToFd(fd, bytes);
  // A write may take only part of the bytes.
  for (let offset = 0; offset < bytes.byteLength; )
    offset += fs.writeSync(fd, bytes, offset, bytes.byteLength - offset);
}
export const renamePath = (from: string, to: string): Promise<void> =>
  call((done) => fs.rename(from, to, (error: NodeJS.ErrnoException | null) => done(error, undefined)));
export const statPath = (path: string): Promise<fs.Stats> => call((done) => fs.stat(path, done));
/** Reads a whole file as UTF-8. */
export const readUtf8 = (path: string): Promise<string> => call((done) => fs.readFile(path, "utf8", done));
export const ftruncateFd = (fd: number, length: number): Promise<void> =>
  call((done) => fs.ftruncate(fd, length, (error: NodeJS.ErrnoException | null) => done(error, undefined)));
/** Reads up to `length` bytes at `position` into `buffer` from its start; resolves with the bytes read. */
export const readFd = (fd: number, buffer: Uint8Array, length: number, position: number): Promise<number> =>
  call((done) => fs.read(fd, buffer, 0, length, position, done));
