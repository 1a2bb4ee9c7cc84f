/** The project's `test` blocks, run from the page (as `auwgent test` runs them). */

import { useState } from "preact/hooks";
import type { TestRun } from "../types";

export function TestsView(props: { result: TestRun | null; running: boolean; onRun: (pattern: string) => void }) {
  const [pattern, setPattern] = useState("");
  const { result } = props;
  const passed = result?.results.filter((r) => r.passed).length ?? 0;
  const failed = (result?.results.length ?? 0) - passed;
  return (
    <div class="tests">
      <form class="row" onSubmit={(e) => { e.preventDefault(); props.onRun(pattern); }}>
        <input aria-label="only the tests whose name contains" placeholder="name contains (optional)"
          value={pattern} onInput={(e) => setPattern(e.currentTarget.value)} />
        <button type="submit" class="primary" disabled={props.running}>{props.running ? "Running…" : "Run tests"}</button>
      </form>
      {result === null ? null : result.ok ? (
        <p class="summary" role="status">{passed} passed, {failed} failed{result.seconds !== undefined ? ` in ${result.seconds.toFixed(2)} s` : ""}</p>
      ) : (
        <pre class="problems" role="alert">{result.problems.join("\n")}</pre>
      )}
      <ul class="test-results">
        {result?.results.map((r) => (
          <li key={`${r.file}:${r.line}`} class={r.passed ? "pass" : "fail"}>
            <span class="badge">{r.passed ? "PASS" : "FAIL"}</span> {r.name}{" "}
            <span class="muted">{r.file}:{r.line}</span>
            {r.report === null ? null : <pre>{r.report}</pre>}
          </li>
        ))}
      </ul>
    </div>
  );
}
