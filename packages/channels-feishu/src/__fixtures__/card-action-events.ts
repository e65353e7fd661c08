/**
 * `card.action.trigger` payloads (the new card callback, 卡片回传交互) in the shape the SDK's EventDispatcher hands
 * to a handler: the v2 envelope's `header` merged with `event`, so `token` is the event's action token. Field layout
 * as Feishu documents and delivers it.
 */

const header = {
  schema: "2.0",
  event_id: "f7984f25108f8137722bb63cee927e66",
  create_time: "1603977298000000",
  event_type: "card.action.trigger",
  tenant_key: "2ed263bf32cf1651",
  app_id: "cli_a1b2c3d4e5f60718",
};

/** The person who pressed (the sender of the p2p fixture message in receive-events.ts). */
export const OPERATOR_OPEN_ID = "ou_84aad35d084aa403a838cf73ee18467";

const operator = {
  tenant_key: "2ed263bf32cf1651",
  user_id: "e33ggbyz",
  open_id: OPERATOR_OPEN_ID,
  union_id: "on_8ed6aa67826108097d9ee143816345",
};

/** A press builder: `value` is the button's value, `context` the card's message and chat. */
function press(value: unknown, chatId: string, extra: Record<string, unknown> = {}): unknown {
  return {
    ...header,
    token: "c-295ee57216a5dc9de90fefd0aadb4b1d7d7b6d80",
    operator,
    action: { value, tag: "button", timezone: "Asia/Shanghai" },
    host: "im_message",
    context: { open_message_id: "om_card_1", open_chat_id: chatId },
    ...extra,
  };
}

/** "Approve" pressed on a card in the direct chat of receive-events.ts's p2p message. */
export const p2pApprove: unknown = press(
  {
    almanac_reply: "approve K7QD",
    almanac_chat_type: "p2p",
    almanac_chat_id: "oc_5ce6d572455d361153b7xx51da133945",
  },
  "oc_5ce6d572455d361153b7xx51da133945",
);

/** "Deny" pressed on a card in a group. */
export const groupDeny: unknown = press(
  { almanac_reply: "deny K7QD", almanac_chat_type: "group", almanac_chat_id: "oc_team" },
  "oc_team",
);

/** "Approve" pressed on a card inside a topic of a group. */
export const threadApprove: unknown = press(
  {
    almanac_reply: "approve K7QD",
    almanac_chat_type: "group",
    almanac_chat_id: "oc_team",
    almanac_thread_id: "omt_1a2b3c",
  },
  "oc_team",
);

/** A card sent to a group, forwarded to another chat and pressed there. */
export const forwardedApprove: unknown = press(
  { almanac_reply: "approve K7QD", almanac_chat_type: "group", almanac_chat_id: "oc_team" },
  "oc_elsewhere",
);

/** A press without an event id (the action token identifies it). */
export const withoutEventId: unknown = { ...(groupDeny as object), event_id: "" };

/** A button of some other card of the app: no `almanac_reply`. */
export const foreignButton: unknown = press({ action: "confirm" }, "oc_team");
