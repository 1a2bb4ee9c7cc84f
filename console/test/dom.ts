// A DOM for component tests: happy-dom's window, its globals installed for Preact.
import { Window } from "happy-dom";

export function installDom(): Window {
  const window = new Window({ url: "http://127.0.0.1:4747/" });
  const globals = globalThis as Record<string, unknown>;
  for (const name of ["document", "HTMLElement", "Node", "Event", "KeyboardEvent", "MouseEvent", "navigator"]) {
    Object.defineProperty(globals, name, { value: (window as unknown as Record<string, unknown>)[name], configurable: true, writable: true });
  }
  globals.window = window;
  return window;
}

/** Let Preact's scheduled re-renders run. */
export const settle = () => new Promise((resolve) => setTimeout(resolve, 0));

export function click(element: Element | null): void {
  if (element === null) throw new Error("no such element");
  (element as HTMLElement).click();
}

export function type(element: Element | null, value: string, event = "input"): void {
  if (element === null) throw new Error("no such element");
  const input = element as HTMLInputElement;
  input.value = value;
  input.dispatchEvent(new (globalThis as unknown as { Event: typeof Event }).Event(event, { bubbles: true }));
}
