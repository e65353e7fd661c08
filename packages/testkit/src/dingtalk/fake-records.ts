import type {
  AckRecord,
  ConnectionRecord,
  DeliveryRecord,
  DownloadRecord,
  RejectionRecord,
  SentMessage,
  UploadRecord,
} from "./types.js";

type WithoutSeq<T> = Omit<T, "seq" | "at">;

/** Everything the fake observed, stamped with one shared sequence so tests can compare orders. */
export class FakeRecords {
  readonly sent: SentMessage[] = [];
  readonly acks: AckRecord[] = [];
  readonly deliveries: DeliveryRecord[] = [];
  readonly rejections: RejectionRecord[] = [];
  readonly connections: ConnectionRecord[] = [];
  readonly problems: string[] = [];
  readonly downloads: DownloadRecord[] = [];
  readonly uploads: UploadRecord[] = [];
  private seq = 0;

  /** The next position in the shared order, with the time (for records kept elsewhere, e.g. card updates). */
  stamp(): { seq: number; at: number } {
    this.seq += 1;
    return { seq: this.seq, at: Date.now() };
  }

  addSent(record: WithoutSeq<SentMessage>): void {
    this.sent.push(Object.freeze({ ...this.stamp(), ...record }));
  }

  addAck(record: WithoutSeq<AckRecord>): void {
    this.acks.push(Object.freeze({ ...this.stamp(), ...record }));
  }

  addDelivery(record: WithoutSeq<DeliveryRecord>): void {
    this.deliveries.push(Object.freeze({ ...this.stamp(), ...record }));
  }

  addRejection(record: WithoutSeq<RejectionRecord>): void {
    this.rejections.push(Object.freeze({ ...this.stamp(), ...record }));
  }

  addDownload(record: WithoutSeq<DownloadRecord>): void {
    this.downloads.push(Object.freeze({ ...this.stamp(), ...record }));
  }

  addUpload(record: WithoutSeq<UploadRecord>): void {
    this.uploads.push(Object.freeze({ ...this.stamp(), ...record }));
  }

  addProblem(problem: string): void {
    this.problems.push(problem);
  }

  openConnection(record: Omit<ConnectionRecord, "openedAt" | "closedAt">): void {
    this.connections.push({ ...record, openedAt: Date.now() });
  }

  closeConnection(id: number): void {
    const index = this.connections.findIndex((connection) => connection.id === id);
    const record = this.connections[index];
    if (record !== undefined && record.closedAt === undefined) {
      this.connections[index] = { ...record, closedAt: Date.now() };
    }
  }
}
