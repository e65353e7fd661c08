import { html } from "htm/preact";
import { useRef } from "preact/hooks";

/** What {@link ChatComposer} shows and whom it tells. */
export interface ChatComposerProps {
  readonly message: string;
  /** The history is on screen: until then nothing can be written or attached. */
  readonly loaded: boolean;
  /** A message of this view is being answered: Stop takes Send's place. */
  readonly sending: boolean;
  readonly stopping: boolean;
  /** Files are attached, so the message may be sent without text. */
  readonly hasFiles: boolean;
  onMessage(message: string): void;
  /** Files pasted or picked. */
  onAttach(files: readonly File[]): void;
  onSend(): void;
  onStop(): void;
}

/** The composer: the message (Enter sends, Shift+Enter starts a new line), Attach, and Send or Stop. */
export function ChatComposer(props: ChatComposerProps) {
  const { loaded, sending } = props;
  const fileInput = useRef<HTMLInputElement>(null);

  const onKeyDown = (event: KeyboardEvent) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      props.onSend();
    }
  };

  return html`
    <form
      class="composer"
      onSubmit=${(event: Event) => {
        event.preventDefault();
        props.onSend();
      }}
    >
      <textarea
        name="message"
        rows="2"
        aria-label="Message"
        placeholder="Message (Enter to send, Shift+Enter for a new line)"
        value=${props.message}
        disabled=${!loaded}
        onInput=${(event: Event) => props.onMessage((event.currentTarget as HTMLTextAreaElement).value)}
        onKeyDown=${onKeyDown}
        onPaste=${(event: ClipboardEvent) => {
          const files = Array.from(event.clipboardData?.files ?? []);
          if (files.length === 0) return;
          // A pasted picture is sent as a file, not as its name in the text.
          event.preventDefault();
          props.onAttach(files);
        }}
      ></textarea>
      <input
        ref=${fileInput}
        class="attach-input"
        type="file"
        multiple
        aria-label="Files to attach"
        onChange=${(event: Event) => {
          const input = event.currentTarget as HTMLInputElement;
          props.onAttach(Array.from(input.files ?? []));
          input.value = "";
        }}
      />
      <button
        type="button"
        class="secondary attach"
        title="Attach files (or paste or drop them here)"
        disabled=${!loaded || sending}
        onClick=${() => fileInput.current?.click()}
      >
        Attach
      </button>
      ${
        sending
          ? html`<button type="button" class="danger stop" onClick=${props.onStop} disabled=${props.stopping}>
              ${props.stopping ? "Stopping…" : "Stop"}
            </button>`
          : html`<button type="submit" disabled=${!loaded || (props.message.trim() === "" && !props.hasFiles)}>
              Send
            </button>`
      }
    </form>
  `;
}
