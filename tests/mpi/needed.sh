#!/usr/bin/env bash
# needed.sh PLUGIN LIB...: libmpi is NEEDED by the MPI plugin (PLUGIN: libdynet_mpi.so, so the check below can
# see it) and by none of the LIBs (libdynet.so, the extension dynet._dynet): they must load without OpenMPI.
set -euo pipefail
needs_mpi() { readelf -d "$1" | grep -E "NEEDED.*\[libmpi[._]" >/dev/null; }
plugin="$1"
shift
if ! needs_mpi "$plugin"; then
  echo "FAIL: $plugin does not NEED libmpi (was it built without MPI?)"
  exit 1
fi
for lib in "$@"; do
  if needs_mpi "$lib"; then
    echo "FAIL: $lib NEEDs libmpi: $(readelf -d "$lib" | grep -E 'NEEDED.*libmpi')"
    exit 1
  fi
done
echo "PASS: only $(basename "$plugin") needs libmpi; not $*"
