#!/usr/bin/env bash
# The main job: compile every example project under examples/, then run the quickstart agent
# and the weather agent (tools + workflows), in Python and in TypeScript. Without GEMINI_API_KEY
# the agents run on the offline model (Python) or a stand-in model (TypeScript); with it, Gemini.
source "$(dirname "$0")/_env.sh"
for project in examples/*/; do
  echo "== auwgent generate $project"
  auwgent generate "$project"
done
echo
echo "== quickstart"
(cd examples/quickstart && python app.py "${@:-hello}")
echo
echo "== weather"
(cd examples/weather && python app.py)
echo
echo "== auwgent test examples/weather"
auwgent test examples/weather
echo
echo "== typescript (the weather agent from TypeScript: examples/typescript/app.ts)"
if command -v node >/dev/null 2>&1 && [ "$(node -p 'process.versions.node.split(".")[0]')" -ge 18 ]; then
  (cd ts && npm_ci && npx tsc -p tsconfig.json)
  (cd examples/typescript && npm install --no-audit --no-fund --loglevel=error >/dev/null \
    && ../../ts/node_modules/.bin/tsx app.ts)
else
  echo "skipped: the TypeScript example needs Node 18 or later"
fi
