#!/usr/bin/env bash
# Runs the whole test suite (sets up .venv on first use).
source "$(dirname "$0")/_env.sh"
ruff check src tests bench examples
ruff format --check src tests bench examples
mypy
python -m pytest "$@"
