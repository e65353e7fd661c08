import type { IncomingMessage, ServerResponse } from "node:http";
import { z } from "zod";
import { sendJson } from "../http-io.js";
import type { FakeRecords } from "./fake-records.js";
import type { RobotHttp } from "./robot-http.js";
import type { CardRecord, CardUpdateRecord } from "./types.js";

/** Options of {@link createCardHttp}. */
export interface CardHttpOptions {
  readonly records: FakeRecords;
  readonly robot: RobotHttp;
  readonly robotCode: string;
  readonly cardTemplateId: string;
}

/** AI cards: `POST card/instances/createAndDeliver` and `PUT card/streaming`. */
export interface CardHttp {
  cards(): readonly CardRecord[];
  /** Answers the request when it is one of the card routes; false otherwise. */
  handle(request: IncomingMessage, response: ServerResponse, url: URL, body: unknown): boolean;
}

/** The variable of the fake's AI card template that streaming writes (what an owner's template names it). */
const CONTENT_KEY = "content";

const createBodySchema = z
  .object({
    cardTemplateId: z.string().min(1),
    outTrackId: z.string().min(1),
    openSpaceId: z.string().min(1),
    cardData: z.object({ cardParamMap: z.record(z.string(), z.string()) }).loose(),
    userIdType: z.number().optional(),
    imRobotOpenDeliverModel: z
      .object({ spaceType: z.literal("IM_ROBOT"), robotCode: z.string() })
      .loose()
      .optional(),
    imGroupOpenDeliverModel: z.object({ robotCode: z.string() }).loose().optional(),
  })
  .loose();
const streamBodySchema = z.object({
  outTrackId: z.string().min(1),
  guid: z.string().min(1),
  key: z.string().min(1),
  content: z.string(),
  isFull: z.boolean(),
  isFinalize: z.boolean(),
  isError: z.boolean().optional(),
});
const OPEN_SPACE = /^dtv1\.card\/\/(IM_ROBOT|IM_GROUP)\.(.+)$/;

interface Card {
  readonly outTrackId: string;
  readonly cardTemplateId: string;
  readonly spaceType: "IM_ROBOT" | "IM_GROUP";
  readonly spaceId: string;
  content: string;
  finalized: boolean;
  readonly updates: CardUpdateRecord[];
}

/**
 * Creates the card handlers. Refusals are DingTalk's HTTP 400 with a `code`; the codes for an unknown template,
 * an unknown outTrackId and a write after the card was finalized are the fake's own choice.
 */
export function createCardHttp(options: CardHttpOptions): CardHttp {
  const { records, robot } = options;
  const cards = new Map<string, Card>();
  const refuse = (response: ServerResponse, code: string, message: string) =>
    robot.reject(response, "card", 400, code, message);

  function update(
    card: Card,
    kind: CardUpdateRecord["kind"],
    content: string,
    isFinalize: boolean,
    isError: boolean,
  ) {
    card.content = content;
    card.finalized = isFinalize;
    card.updates.push(Object.freeze({ ...records.stamp(), kind, content, isFinalize, isError }));
  }

  function handleCreate(request: IncomingMessage, response: ServerResponse, body: unknown): void {
    if (!robot.authorize(request, response, "card")) return;
    const parsed = createBodySchema.safeParse(body);
    if (!parsed.success) {
      refuse(response, "InvalidParameter", `invalid request body: ${parsed.error.message}`);
      return;
    }
    const data = parsed.data;
    if (data.cardTemplateId !== options.cardTemplateId) {
      refuse(
        response,
        "InvalidParameter.CardTemplateId",
        `card template ${data.cardTemplateId} does not exist`,
      );
      return;
    }
    if (cards.has(data.outTrackId)) {
      refuse(response, "InvalidParameter.OutTrackId", `outTrackId ${data.outTrackId} already exists`);
      return;
    }
    const space = OPEN_SPACE.exec(data.openSpaceId);
    const spaceType = space?.[1] === "IM_GROUP" ? "IM_GROUP" : "IM_ROBOT";
    const deliver = spaceType === "IM_GROUP" ? data.imGroupOpenDeliverModel : data.imRobotOpenDeliverModel;
    if (space?.[2] === undefined || deliver === undefined) {
      refuse(
        response,
        "InvalidParameter.OpenSpaceId",
        `openSpaceId ${data.openSpaceId} needs its deliver model`,
      );
      return;
    }
    if (deliver.robotCode !== options.robotCode) {
      refuse(response, "InvalidParameter", `robot ${deliver.robotCode} does not exist`);
      return;
    }
    const card: Card = {
      outTrackId: data.outTrackId,
      cardTemplateId: data.cardTemplateId,
      spaceType,
      spaceId: space[2],
      content: "",
      finalized: false,
      updates: [],
    };
    cards.set(card.outTrackId, card);
    update(card, "create", data.cardData.cardParamMap[CONTENT_KEY] ?? "", false, false);
    sendJson(response, 200, {
      success: true,
      result: {
        outTrackId: card.outTrackId,
        deliverResults: [
          { spaceType, spaceId: card.spaceId, success: true, carrierId: `carrier-${card.outTrackId}` },
        ],
      },
    });
  }

  function handleStream(request: IncomingMessage, response: ServerResponse, body: unknown): void {
    if (!robot.authorize(request, response, "card")) return;
    const parsed = streamBodySchema.safeParse(body);
    if (!parsed.success) {
      refuse(response, "InvalidParameter", `invalid request body: ${parsed.error.message}`);
      return;
    }
    const data = parsed.data;
    const card = cards.get(data.outTrackId);
    if (card === undefined) {
      refuse(response, "InvalidParameter.OutTrackId", `card ${data.outTrackId} does not exist`);
      return;
    }
    if (data.key !== CONTENT_KEY) {
      refuse(response, "InvalidParameter.Key", `the card template has no variable ${data.key}`);
      return;
    }
    if (card.finalized) {
      refuse(response, "InvalidParameter.Finalized", `card ${data.outTrackId} was finalized`);
      return;
    }
    // isFull false would append a delta; the fake keeps that too, so a client sending deltas is seen doing so.
    update(
      card,
      "stream",
      data.isFull ? data.content : card.content + data.content,
      data.isFinalize,
      data.isError ?? false,
    );
    sendJson(response, 200, { success: true, result: true });
  }

  return {
    cards: () => [...cards.values()].map((card) => Object.freeze({ ...card, updates: [...card.updates] })),
    handle(request, response, url, body) {
      if (request.method === "POST" && url.pathname === "/v1.0/card/instances/createAndDeliver") {
        handleCreate(request, response, body);
        return true;
      }
      if (request.method === "PUT" && url.pathname === "/v1.0/card/streaming") {
        handleStream(request, response, body);
        return true;
      }
      return false;
    },
  };
}
