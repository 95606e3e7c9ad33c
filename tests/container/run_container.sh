#!/usr/bin/env bash
# Build the action image and run it the way the GitHub runner runs a Docker
# container action (tests/container/test_container.py), reporting build time
# and image size. Extra arguments go to pytest.
#
#   tests/container/run_container.sh     # needs a Docker engine (`docker info` works)
set -euo pipefail
cd "$(dirname "$0")/../.."
reason='Docker engine not available (`docker info` fails): the action image is not built or run'
if ! command -v docker >/dev/null 2>&1 || ! docker info >/dev/null 2>&1; then
  echo "skipped: $reason" >&2
  exit 0
fi
image=${PASSK_CONTAINER_IMAGE:-passk-action:test}
start=$(date +%s)
docker build --network host -t "$image" .
seconds=$(( $(date +%s) - start ))
bytes=$(docker image inspect --format '{{.Size}}' "$image")
echo "run_container: built $image in ${seconds} s; image size $(( bytes / 1000000 )) MB" >&2
PASSK_CONTAINER_IMAGE=$image PASSK_CONTAINER_BUILT=1 exec python3 -m pytest tests/container -q "$@"
