#!/usr/bin/env bash
# The passk demo, end to end: the committed baseline (production prompt v1),
# a candidate run of the new prompt v2, confirmation of every lost row, the
# gate, and an audit of the gate from the recorded verdicts alone.
#
# v2 is more accurate, and the gate still fails: it broke must-not-break rows.
# That failure is the point of the demo, so this script exits 0 when passk
# behaves as designed (compare exits 1, gate agrees) and non-zero otherwise.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${PASSK_DEMO_OUT:-$(mktemp -d)}"
mkdir -p "$out"

echo "== 1. The committed baseline (v1, in production)"
passk report "$here/.passk/baseline.json" | sed -n '1,12p'

echo
echo "== 2. passk compare: run v2 k=3 times per row, confirm lost rows, decide the gate"
passk compare --config "$here/passk.yml" --candidate-out "$out/candidate.json" \
  --json "$out/result.json" --markdown "$out/report.md"
compare_code=$?
cat "$out/report.md"

echo
echo "== 3. passk gate: the same decision, recomputed from result.json without any agent"
passk gate "$out/result.json"
gate_code=$?

echo
echo "Files: $out/result.json (every attempt of both versions), $out/report.md"
if [ "$compare_code" -eq 1 ] && [ "$gate_code" -eq 1 ]; then
  echo "Demo OK: accuracy went up, must-not-break rows broke, and the gate failed (exit 1) as it should."
  exit 0
fi
echo "Demo FAILED: expected compare and gate to exit 1, got $compare_code and $gate_code." >&2
exit 1
