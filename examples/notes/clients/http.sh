#!/usr/bin/env bash
# The notes app over plain HTTP, with curl and jq: the human mints a token (an anonymous
# identity in a cookie jar, as `local_development()` gives), the agent observes and sends
# messages with it over LAP, a delete waits for the human, who approves it, and the agent reads
# the result. Usage: `http.sh [BASE_URL]` (default http://127.0.0.1:8790).
set -euo pipefail
base=${1:-http://127.0.0.1:8790}
jar=$(mktemp)
trap 'rm -f "$jar"' EXIT

# The human: a token for a new session. The server sets the identity cookie; the jar keeps it.
minted=$(curl -sSf -c "$jar" -b "$jar" -X POST "$base/agent/mint")
token=$(jq -r .token <<<"$minted")
session=$(jq -r .sessionId <<<"$minted")
echo "minted a token for session $session"

# The agent: `POST /agent/lap/v1/<operation>` with its bearer and a JSON body.
lap() {
  curl -sSf "$base/agent/lap/v1/$1" -H "Authorization: Bearer $token" \
    -H 'Content-Type: application/json' -d "$2"
}

lap observe '{}' | jq -c '{state, available: [.actions[] | select(.available != false) | .variant]}'
lap message '{"msg": {"type": "add", "text": "buy milk"}}' | jq -c '{status, stateDiff}'

# `delete` is @requiresConfirm: with `timeoutMs: 0` the answer does not wait for the human.
parked=$(lap message '{"msg": {"type": "delete", "id": 1}, "reason": "bought it", "timeoutMs": 0}')
jq -c '{status, confirmId}' <<<"$parked"
confirm=$(jq -r .confirmId <<<"$parked")

# The human approves it, with the same cookie jar (no bearer: human routes refuse one).
curl -sSf -b "$jar" -X POST "$base/agent/human/sessions/$session/confirms/$confirm" \
  -H 'Content-Type: application/json' -d '{"decision": "approve"}'
echo

# The agent reads the outcome.
lap confirm-result "{\"confirmId\": \"$confirm\"}" | jq -c '{status, stateAfter}'
