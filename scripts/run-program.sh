#!/usr/bin/env bash
# Starts one portalwatch program for supervisord: it loads deploy/portalwatch.env
# (the operator's settings, if the file exists) and then execs the binary, so the
# program keeps this process's pid and receives supervisord's signals directly.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
program=${1:?usage: run-program.sh scheduler|crawler|processor|web}
# The settings `make up` recorded come first (scripts/supervise.sh record),
# the operator's file after them, so the file wins.
# Its lines are NAME=value as recorded, taken as they are, never as shell
# (a user agent holds parentheses).
if [ -f "$root/deploy/supervisor/run/environment" ]; then
  while IFS= read -r line; do
    case $line in [A-Z]*=*) export "$line" ;; esac
  done <"$root/deploy/supervisor/run/environment"
fi
if [ -f "$root/deploy/portalwatch.env" ]; then
  set -a
  # shellcheck disable=SC1091
  . "$root/deploy/portalwatch.env"
  set +a
fi
# PORTALWATCH_BIN_DIR lets a test run supervisord's config with binaries it built.
exec "${PORTALWATCH_BIN_DIR:-$root/bin}/$program"
