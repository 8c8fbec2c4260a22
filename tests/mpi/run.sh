#!/usr/bin/env bash
# Runs one MPI test program under mpirun on this machine and checks how the job ended.
#   run.sh MPIEXEC NPROCS EXPECT PATTERN PROGRAM [ARGS...]
# EXPECT=pass: the job must exit 0 and print PATTERN. EXPECT=fail: the job must end by itself (no
# timeout) with a non-zero status, print PATTERN, and never print "the job was not stopped".
set -uo pipefail
mpiexec="$1" nprocs="$2" expect="$3" pattern="$4"
shift 4
# mpirun refuses to start as root without these; --oversubscribe allows more ranks than cores.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Shared-memory transport only: the tests run on one machine (and containers may lack network interfaces).
export OMPI_MCA_btl="self,vader"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
timeout 120 "$mpiexec" --oversubscribe -np "$nprocs" "$@" >"$out" 2>&1
status=$?
cat "$out"
if [ $status -eq 124 ]; then
  echo "run.sh: FAIL: the job did not end within 120 s (a rank hangs)"
  exit 1
fi
if ! grep -q -- "$pattern" "$out"; then
  echo "run.sh: FAIL: the output lacks '$pattern'"
  exit 1
fi
if [ "$expect" = pass ]; then
  [ $status -eq 0 ] || { echo "run.sh: FAIL: exit status $status"; exit 1; }
else
  [ $status -ne 0 ] || { echo "run.sh: FAIL: the job exited 0 although a rank failed"; exit 1; }
  if grep -q "the job was not stopped" "$out"; then
    echo "run.sh: FAIL: a rank went on after another rank failed"
    exit 1
  fi
fi
echo "run.sh: ok (exit status $status)"
