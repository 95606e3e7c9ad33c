#!/usr/bin/env bash
# The structured-decision demo: v2 keeps the action and drifts the amount on
# must-not-break rows; passk compares the whole decision and fails the gate.
# Exits 0 when passk behaves as designed (compare and gate exit 1).
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
  echo "Demo OK: the amount drifted on must-not-break rows and the gate failed (exit 1) as it should."
  exit 0
fi
echo "Demo FAILED: expected compare and gate to exit 1, got $compare_code and $gate_code." >&2
exit 1
