import { useEffect, useRef, useState } from "preact/hooks";
import { ApiError, api, sessionPath } from "../api.js";
import { type ChatLine, chatLinesOf } from "../chat-files.js";
import { webSessionKey } from "../conversations.js";
import { asArray, asRecord } from "../read.js";

/** A conversation's messages as the chat shows them; none for a conversation the server does not have yet. */
async function loadHistory(conversation: string): Promise<ChatLine[]> {
  try {
    const detail = asRecord(await api(sessionPath(webSessionKey(conversation))));
    return chatLinesOf(asArray(detail.messages));
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) return [];
    throw error;
  }
}

/** What {@link useChatHistory} reads from the view. */
export interface ChatHistoryOptions {
  readonly conversation: string;
  /** A reply of this conversation is being written (by this view, another tab, or before this view opened). */
  readonly running: boolean;
  /** Changes each time a scheduled task's reply is delivered into this conversation: its history is read again. */
  readonly deliveries: number;
  /** Told when the history cannot be read. */
  onError(error: unknown): void;
}

/** One conversation's lines on screen, and what the view's own sends need to keep them right. */
export interface ChatHistory {
  readonly lines: ChatLine[];
  /** The history is on screen (or could not be read): until then the composer is disabled. */
  readonly loaded: boolean;
  /** The view is still on the page; a reply that ends after it left changes nothing. */
  readonly mounted: { readonly current: boolean };
  /** This view sent a message while the current run lasted: its reply is on screen already. */
  readonly sentDuringRun: { readonly current: boolean };
  /** Adds lines at the end (the message sent and its reply). */
  append(lines: readonly ChatLine[]): void;
  /** Changes the last line (the reply being written), unless the view has left. */
  replaceLast(update: (line: ChatLine) => ChatLine): void;
  /** This view sends a message: a history load that started before it ends without effect. */
  sendStarted(): void;
  /** This view's send ended (answered, stopped or failed). */
  sendEnded(): void;
}

/**
 * A conversation's history: read when the view opens, when a task's reply was delivered into it, and when a reply
 * this view did not send ends.
 */
export function useChatHistory(options: ChatHistoryOptions): ChatHistory {
  const { conversation, running, deliveries, onError } = options;
  const [lines, setLines] = useState<ChatLine[]>([]);
  // Until the history is on screen the composer is disabled: a message sent earlier would be wiped from view
  // when the history arrives.
  const [loaded, setLoaded] = useState(false);
  const [historyGeneration, setHistoryGeneration] = useState(0);
  const mounted = useRef(true);
  /** Messages this view sent; a history load that started before one ends without effect. */
  const sends = useRef(0);
  const sentDuringRun = useRef(false);
  const wasRunning = useRef(running);

  useEffect(
    () => () => {
      mounted.current = false;
    },
    [],
  );

  useEffect(() => {
    let current = true;
    const sendsAtStart = sends.current;
    loadHistory(conversation).then(
      (history) => {
        if (!current || sends.current !== sendsAtStart) return;
        setLines(history);
        setLoaded(true);
      },
      (caught: unknown) => {
        if (!current) return;
        onError(caught);
        setLoaded(true);
      },
    );
    return () => {
      current = false;
    };
  }, [conversation, historyGeneration, deliveries]);

  // A reply this view did not send (another tab's, or one still running when the view opened) is read from
  // the history once it ends.
  useEffect(() => {
    if (wasRunning.current && !running) {
      if (!sentDuringRun.current) setHistoryGeneration((generation) => generation + 1);
      sentDuringRun.current = false;
    }
    wasRunning.current = running;
  }, [running]);

  return {
    lines,
    loaded,
    mounted,
    sentDuringRun,
    append: (added) => setLines((previous) => [...previous, ...added]),
    replaceLast(update) {
      if (!mounted.current) return;
      setLines((previous) => {
        const last = previous.at(-1);
        return last ? [...previous.slice(0, -1), update(last)] : previous;
      });
    },
    sendStarted() {
      sends.current += 1;
      sentDuringRun.current = true;
    },
    sendEnded() {
      // With the run's end already seen (or no live events to see it), nothing is left to wait for.
      if (!wasRunning.current) sentDuringRun.current = false;
    },
  };
}
