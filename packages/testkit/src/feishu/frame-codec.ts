import protobuf from "protobufjs";
import { z } from "zod";

/**
 * The long-connection frame of the Feishu/Lark open platform (`pbbp2.Frame`, proto2), as the official SDK
 * encodes it. Method 0 frames are control frames (ping/pong), method 1 frames carry events and their acks.
 */
export interface FeishuFrame {
  readonly SeqID: number;
  readonly LogID: number;
  readonly service: number;
  readonly method: number;
  readonly headers: readonly { readonly key: string; readonly value: string }[];
  readonly payloadEncoding?: string;
  readonly payloadType?: string;
  readonly payload?: Uint8Array;
  readonly LogIDNew?: string;
}

/** Frame `method` values. */
export const FRAME_METHOD = { control: 0, data: 1 } as const;

// The SDK declares SeqID and LogID as uint64. They are declared uint32 here: the varint wire encoding is the
// same for the small values in use, and uint64 would make protobufjs depend on Long, which the SDK switches off
// process-wide (`util.Long = undefined`) when it loads, breaking uint64 types built before that.
const PROTO = `syntax = "proto2";
package pbbp2;
message Header { required string key = 1; required string value = 2; }
message Frame {
  required uint32 SeqID = 1;
  required uint32 LogID = 2;
  required int32 service = 3;
  required int32 method = 4;
  repeated Header headers = 5;
  optional string payload_encoding = 6;
  optional string payload_type = 7;
  optional bytes payload = 8;
  optional string LogIDNew = 9;
}`;

const frameType = protobuf.parse(PROTO).root.lookupType("pbbp2.Frame");

const decodedFrameSchema = z.object({
  SeqID: z.number(),
  LogID: z.number(),
  service: z.number(),
  method: z.number(),
  headers: z.array(z.object({ key: z.string(), value: z.string() })).default([]),
  payload_encoding: z.string().optional(),
  payload_type: z.string().optional(),
  payload: z.instanceof(Uint8Array).optional(),
  LogIDNew: z.string().optional(),
});

/** Encodes a frame to the bytes sent on the WebSocket. */
export function encodeFrame(frame: FeishuFrame): Uint8Array {
  const message = frameType.fromObject({
    SeqID: frame.SeqID,
    LogID: frame.LogID,
    service: frame.service,
    method: frame.method,
    headers: frame.headers.map((header) => ({ key: header.key, value: header.value })),
    ...(frame.payloadEncoding === undefined ? {} : { payload_encoding: frame.payloadEncoding }),
    ...(frame.payloadType === undefined ? {} : { payload_type: frame.payloadType }),
    ...(frame.payload === undefined ? {} : { payload: frame.payload }),
    ...(frame.LogIDNew === undefined ? {} : { LogIDNew: frame.LogIDNew }),
  });
  return frameType.encode(message).finish();
}

/** Decodes bytes received on the WebSocket; throws when they are not a valid frame. */
export function decodeFrame(bytes: Uint8Array): FeishuFrame {
  const object: unknown = frameType.toObject(frameType.decode(bytes), { longs: Number });
  const parsed = decodedFrameSchema.parse(object);
  return {
    SeqID: parsed.SeqID,
    LogID: parsed.LogID,
    service: parsed.service,
    method: parsed.method,
    headers: parsed.headers,
    ...(parsed.payload_encoding === undefined ? {} : { payloadEncoding: parsed.payload_encoding }),
    ...(parsed.payload_type === undefined ? {} : { payloadType: parsed.payload_type }),
    ...(parsed.payload === undefined ? {} : { payload: parsed.payload }),
    ...(parsed.LogIDNew === undefined ? {} : { LogIDNew: parsed.LogIDNew }),
  };
}

/** The value of header `key` of a frame, if present. */
export function frameHeader(frame: FeishuFrame, key: string): string | undefined {
  return frame.headers.find((header) => header.key === key)?.value;
}
