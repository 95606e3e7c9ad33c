#!/usr/bin/env bash
# The environment-scored demo: v2 sometimes leaves the database in the wrong
# state on a must-not-break task; passk fails the gate. Exits 0 when passk
# behaves as designed (compare and gate exit 1).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${PASSK_DEMO_OUT:-$(mktemp -d)}"
mkdir -p "$out"

passk compare --config "$here/passk.yml" --candidate-out "$out/candidate.json" \
  --json "$out/result.json" --markdown "$out/report.md"
compare_code=$?
sed -n '1,12p' "$out/report.md"
passk gate "$out/result.json"
gate_code=$?
if [ "$compare_code" -eq 1 ] && [ "$gate_code" -eq 1 ]; then
  echo "Demo OK: a must-not-break task failed in its environment and the gate failed (exit 1) as it should."
  exit 0
fi
echo "Demo FAILED: expected compare and gate to exit 1, got $compare_code and $gate_code." >&2
exit 1
