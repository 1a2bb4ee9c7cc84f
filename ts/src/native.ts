// The native function-calling protocol is not in this runtime yet (ts/README.md lists it):
// an agent whose IR or config asks for it is refused before any model call.

import type { AssistantTurn, Codec, Decoder } from "./blocks.js";
import { UnsupportedError } from "./errors.js";
import type { Message } from "./providers/base.js";
import type { CallOutcome, Contract } from "./section.js";

const MESSAGE = 'protocol: "native" is not available in the TypeScript runtime yet; use the default "blocks" protocol (see ts/README.md)';

export class NativeCodec implements Codec {
  name = "native" as const;
  constructor() {
    throw new UnsupportedError(MESSAGE);
  }
  systemSection(_contract: Contract): string {
    throw new UnsupportedError(MESSAGE);
  }
  functions(): never {
    throw new UnsupportedError(MESSAGE);
  }
  responseSchema(): never {
    throw new UnsupportedError(MESSAGE);
  }
  decoder(_contract: Contract, _partials: boolean): Decoder {
    throw new UnsupportedError(MESSAGE);
  }
  assistantMessage(_turn: AssistantTurn): Message {
    throw new UnsupportedError(MESSAGE);
  }
  resultsMessages(_outcomes: CallOutcome[]): Message[] {
    throw new UnsupportedError(MESSAGE);
  }
  feedbackMessage(_text: string): Message {
    throw new UnsupportedError(MESSAGE);
  }
}
