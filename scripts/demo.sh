#!/usr/bin/env bash
# The main job: compile every example project under examples/, then run the quickstart agent
# and the weather agent (tools + workflows). Without GEMINI_API_KEY the agents run on the
# offline model that ships with Auwgent; with it, they talk to Gemini.
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
