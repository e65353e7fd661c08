import { randomUUID } from "node:crypto";
import { z } from "zod";
import { DingTalkError } from "./errors.js";
import type { OpenApiClient } from "./open-api-client.js";

/** The template variable a reply is streamed into: the AI card template must have a Markdown variable of this name. */
export const CARD_CONTENT_KEY = "content";

/** Where a card goes: a one-on-one chat with the robot (by the user's staff id) or a group. */
export type CardTarget =
  | { readonly kind: "dm"; readonly staffId: string }
  | { readonly kind: "group"; readonly openConversationId: string };

/** Settings of {@link CardApi}. */
export interface CardApiSettings {
  readonly client: OpenApiClient;
  readonly robotCode: string;
  readonly cardTemplateId: string;
}

const createAnswerSchema = z
  .object({
    success: z.boolean().optional(),
    result: z
      .object({
        deliverResults: z
          .array(z.object({ success: z.boolean().optional(), errorMsg: z.string().optional() }).loose())
          .optional(),
      })
      .loose()
      .optional(),
  })
  .loose();

/**
 * DingTalk's AI cards: a card instance of the configured template is created and delivered into a conversation
 * (`card/instances/createAndDeliver`), then its `content` variable is replaced as the reply grows
 * (`PUT card/streaming`, whole text each time) until the last update finalizes it.
 */
export class CardApi {
  private readonly settings: CardApiSettings;

  constructor(settings: CardApiSettings) {
    this.settings = settings;
  }

  /**
   * Creates a card showing `content` in the target's conversation; `outTrackId` names it from then on.
   * @throws DingTalkError `dingtalk.send_failed` when DingTalk refused it (unknown template, missing permission, a
   * delivery that failed), `dingtalk.rate_limited`, `dingtalk.network`, `dingtalk.bad_response`
   */
  async createAndDeliver(outTrackId: string, target: CardTarget, content: string): Promise<void> {
    const { robotCode, cardTemplateId } = this.settings;
    const space =
      target.kind === "group"
        ? {
            openSpaceId: `dtv1.card//IM_GROUP.${target.openConversationId}`,
            imGroupOpenSpaceModel: { supportForward: true },
            imGroupOpenDeliverModel: { robotCode },
          }
        : {
            openSpaceId: `dtv1.card//IM_ROBOT.${target.staffId}`,
            imRobotOpenSpaceModel: { supportForward: true },
            imRobotOpenDeliverModel: { spaceType: "IM_ROBOT", robotCode },
          };
    const answer = await this.settings.client.call("POST", "/v1.0/card/instances/createAndDeliver", {
      cardTemplateId,
      outTrackId,
      cardData: { cardParamMap: { [CARD_CONTENT_KEY]: content } },
      // 1: the ids in openSpaceId are staff ids (userid), not unionids.
      userIdType: 1,
      ...space,
    });
    const parsed = createAnswerSchema.safeParse(answer);
    if (!parsed.success)
      throw new DingTalkError("dingtalk.bad_response", "DingTalk createAndDeliver answer is not an object.");
    // HTTP 200 can still carry a delivery that failed (the robot is not in the group, the user left…).
    const failed = parsed.data.result?.deliverResults?.find((result) => result.success === false);
    if (parsed.data.success === false || failed !== undefined) {
      throw new DingTalkError(
        "dingtalk.send_failed",
        `DingTalk did not deliver the card (${failed?.errorMsg ?? "success: false"}).`,
      );
    }
  }

  /**
   * Replaces the card's content with `content` (the whole text, not a delta); `isFinalize` ends the streaming.
   * @throws DingTalkError as {@link createAndDeliver}
   */
  async stream(outTrackId: string, content: string, isFinalize: boolean): Promise<void> {
    await this.settings.client.call("PUT", "/v1.0/card/streaming", {
      outTrackId,
      guid: randomUUID(),
      key: CARD_CONTENT_KEY,
      content,
      isFull: true,
      isFinalize,
      isError: false,
    });
  }
}
