import { z } from "zod";

/** A button a card shows, as a person sees and presses it. */
export interface FakeCardButton {
  /** The text on the button (`text.content`). */
  readonly label: string;
  /** `primary`, `danger`, `default`, … as the card says. */
  readonly type: string;
  /** What Feishu echoes in `card.action.trigger` when it is pressed. */
  readonly value: unknown;
}

/** The toast of a card callback's answer, as the presser sees it. */
export interface FakeCardToast {
  readonly type: string;
  readonly content: string;
}

const element = z.looseObject({ tag: z.string().min(1) });
/** Feishu's button types (card JSON 1.0 and 2.0). */
const buttonType = z.enum([
  "default",
  "primary",
  "danger",
  "text",
  "primary_text",
  "danger_text",
  "primary_filled",
  "danger_filled",
  "laser",
]);
const button = z.looseObject({
  tag: z.literal("button"),
  text: z.object({ tag: z.enum(["plain_text", "lark_md"]), content: z.string().min(1) }),
  type: buttonType.optional(),
  value: z.record(z.string(), z.unknown()).optional(),
  behaviors: z.array(z.looseObject({ type: z.string(), value: z.unknown().optional() })).optional(),
});
const cardV1 = z.looseObject({
  config: z.looseObject({ update_multi: z.boolean().optional() }).optional(),
  header: z.looseObject({}).optional(),
  elements: z.array(element),
});
const cardV2 = z.looseObject({
  schema: z.literal("2.0"),
  config: z.looseObject({}).optional(),
  body: z.looseObject({ elements: z.array(element) }),
});
const templateCard = z.looseObject({
  type: z.literal("template"),
  data: z.looseObject({ template_id: z.string().min(1) }),
});
const cardSchema = z.union([cardV1, cardV2, templateCard]);

/** `{toast?, card?}`: what an app may answer a `card.action.trigger` with. */
const callbackAnswer = z.object({
  toast: z
    .looseObject({
      type: z.enum(["info", "success", "error", "warning"]),
      content: z.string().optional(),
      i18n: z.record(z.string(), z.string()).optional(),
    })
    .optional(),
  card: z
    .union([
      z.object({ type: z.literal("raw"), data: z.unknown() }),
      z.object({ type: z.literal("template"), data: z.looseObject({ template_id: z.string() }) }),
    ])
    .optional(),
});

/**
 * Checks an interactive message's card like Feishu does before sending it (JSON 1.0 `elements`, JSON 2.0 `body`,
 * or a template; every button well formed); returns what is wrong, or undefined.
 */
export function cardProblem(card: unknown): string | undefined {
  const parsed = cardSchema.safeParse(card);
  if (!parsed.success) return "the card needs elements (JSON 1.0), schema 2.0 with body, or a template";
  for (const candidate of objectsTagged(card, "button")) {
    const checked = button.safeParse(candidate);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      return `a button is malformed at ${issue?.path.join(".") ?? "?"}: ${issue?.message ?? "invalid"}`;
    }
  }
  return undefined;
}

/**
 * True for a shared card, the only kind Feishu lets an app update for everyone: JSON 1.0 must say
 * `config.update_multi: true`; JSON 2.0 is shared unless it says `false`; a template is taken as shared.
 */
export function isSharedCard(card: unknown): boolean {
  const parsed = cardSchema.safeParse(card);
  if (!parsed.success) return false;
  const config: unknown = Reflect.get(parsed.data, "config");
  const updateMulti: unknown =
    typeof config === "object" && config !== null ? Reflect.get(config, "update_multi") : undefined;
  if ("elements" in parsed.data && !("schema" in parsed.data)) return updateMulti === true;
  return updateMulti !== false;
}

/** The buttons a card shows, in order. */
export function buttonsOf(card: unknown): FakeCardButton[] {
  return objectsTagged(card, "button").flatMap((candidate) => {
    const parsed = button.safeParse(candidate);
    if (!parsed.success) return [];
    const callback = parsed.data.behaviors?.find((behavior) => behavior.type === "callback");
    return [
      {
        label: parsed.data.text.content,
        type: parsed.data.type ?? "default",
        value: parsed.data.value ?? callback?.value,
      },
    ];
  });
}

/**
 * Reads an app's answer to a card callback. Feishu shows the toast and replaces the card with a `raw` one; an
 * answer it would refuse throws (the presser would see an error instead).
 */
export function readCallbackAnswer(answer: unknown): { toast?: FakeCardToast; card?: unknown } {
  if (answer === undefined || answer === null || answer === "") return {};
  const parsed = callbackAnswer.safeParse(answer);
  if (!parsed.success) {
    throw new Error(`fake Feishu: the card callback answer is invalid: ${JSON.stringify(answer)}`);
  }
  const { toast, card } = parsed.data;
  if (card?.type === "raw") {
    const problem = cardProblem(card.data);
    if (problem !== undefined) throw new Error(`fake Feishu: the card in the callback answer: ${problem}`);
  }
  return {
    ...(toast === undefined ? {} : { toast: { type: toast.type, content: toast.content ?? "" } }),
    ...(card?.type === "raw" ? { card: card.data } : {}),
  };
}

/** Every object inside `value` whose `tag` is `tag`, depth first. */
function objectsTagged(value: unknown, tag: string): unknown[] {
  if (Array.isArray(value)) return value.flatMap((item) => objectsTagged(item, tag));
  if (typeof value !== "object" || value === null) return [];
  const own = Reflect.get(value, "tag") === tag ? [value] : [];
  return [...own, ...Object.values(value).flatMap((item) => objectsTagged(item, tag))];
}
