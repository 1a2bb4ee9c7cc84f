#!/usr/bin/env bash
# The main job: check the example projects under examples/.
source "$(dirname "$0")/_env.sh"
for project in examples/*/; do
  auwgent check "$project"
done
