#!/usr/bin/env bash
# passk on a real LLM agent, end to end, with no API key and no network: a local
# OpenAI-compatible server (fake_openai.py, loopback only) stands in for the model
# provider. The agent is unchanged from what you would run against OpenAI.
#
# Steps: start the fake server on a free port, point the agent at it
# (OPENAI_BASE_URL, OPENAI_API_KEY), show the committed baseline (prompt v1),
# run passk compare on the candidate prompt (v2) with confirmation of lost rows,
# then recompute the gate from the recorded verdicts. The server always stops.
#
# v2 is more accurate and the gate still fails on must-not-break rows: the
# script exits 0 when passk behaves as designed (compare and gate exit 1).
# PASSK_DEMO_REGENERATE_BASELINE=1 re-records .passk/baseline.json first.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${PASSK_DEMO_OUT:-$(mktemp -d)}"
mkdir -p "$out"
python="${PYTHON:-python3}"

if ! "$python" -c 'import openai' 2>/dev/null; then
  echo "The agent needs the openai SDK: python3 -m pip install -e '.[examples]'" \
       "(or -r $here/requirements.txt)" >&2
  exit 2
fi

# The fake provider: seeded, 5% of calls rate-limited (429 with Retry-After: 1).
"$python" "$here/fake_openai.py" --port 0 --seed "${PASSK_DEMO_SEED:-0}" \
  --rate-limit 0.05 --retry-after 1 --idle-timeout 300 >"$out/fake_openai.url" \
  2>"$out/fake_openai.log" &
server_pid=$!
stop_server() {
  kill -TERM "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
  cat "$out/fake_openai.log" >&2
}
trap stop_server EXIT
trap 'exit 130' INT TERM
for _ in $(seq 50); do
  [ -s "$out/fake_openai.url" ] && break
  kill -0 "$server_pid" 2>/dev/null || break
  sleep 0.1
done
if [ ! -s "$out/fake_openai.url" ]; then
  echo "Demo FAILED: the fake OpenAI server did not start." >&2
  exit 1
fi
export OPENAI_BASE_URL="$(head -n1 "$out/fake_openai.url")"
export OPENAI_API_KEY=passk-demo-key
echo "== 0. A local OpenAI-compatible server at $OPENAI_BASE_URL stands in for the provider"

if [ "${PASSK_DEMO_REGENERATE_BASELINE:-0}" = 1 ]; then
  echo
  echo "== Re-recording the baseline (prompt v1)"
  passk baseline --config "$here/passk.yml" --agent baseline.agent --quiet || exit 1
fi

echo
echo "== 1. The committed baseline (prompt v1, in production)"
passk report "$here/.passk/baseline.json" | sed -n '1,12p'

echo
echo "== 2. passk compare: prompt v2 k=3 times per row, confirm lost rows, decide the gate"
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
