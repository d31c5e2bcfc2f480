#!/bin/bash
# bench/nets/run.sh — CPU networks, gpuflock against PyTorch, 1 and 2 threads.
# Usage: bench/nets/run.sh [--windows N] [--rounds N]   (after `make`)
set -eu
cd "$(dirname "$0")/../.."
exec /usr/bin/python3 bench/nets/bench.py --build "${BUILD:-build}" "$@"
