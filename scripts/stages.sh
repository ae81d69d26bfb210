# Stage runner for scripts/run_tests.sh and .ci/run (sourced, not run).
# A stage is one command. Every stage runs, whatever the ones before it did.
# stage_summary prints one line per stage and fails if any stage failed.
#   run_stage NAME COMMAND [ARG...]   run a stage, record its exit status
#   stage_summary                     print the summary; status 1 if any stage failed

STAGE_NAMES=()
STAGE_CODES=()

run_stage() {
  local name=$1 code=0
  shift
  printf '\n==> %s\n' "$name"
  "$@" || code=$?
  STAGE_NAMES+=("$name")
  STAGE_CODES+=("$code")
  if [ "$code" -ne 0 ]; then
    printf '==> %s FAILED (exit %s); the next stages still run\n' "$name" "$code"
  fi
  return 0
}

stage_summary() {
  local i failed=0
  printf '\n==> summary\n'
  for i in "${!STAGE_NAMES[@]}"; do
    if [ "${STAGE_CODES[$i]}" -eq 0 ]; then
      printf 'PASS  %s\n' "${STAGE_NAMES[$i]}"
    else
      printf 'FAIL  %s (exit %s)\n' "${STAGE_NAMES[$i]}" "${STAGE_CODES[$i]}"
      failed=$((failed + 1))
    fi
  done
  if [ "$failed" -gt 0 ]; then
    printf '%s of %s stages failed\n' "$failed" "${#STAGE_NAMES[@]}"
    return 1
  fi
  printf 'all %s stages passed\n' "${#STAGE_NAMES[@]}"
}
