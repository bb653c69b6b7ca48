#!/usr/bin/env bash
# Prints the supervisord include list for the roles one machine runs, as
# deploy/supervisor/supervisord.conf takes it in PORTALWATCH_SUPERVISOR_INCLUDE
# (paths relative to that file's folder):
#
#   scripts/supervisor-roles.sh crawler,processor
#   conf.d/crawler.conf conf.d/processor.conf
#
# ROLES is a comma-separated list of scheduler, crawler, processor, extractor, web,
# notifier and renderer, in any order; empty means the first six, as `make up` runs them
# by default (the renderer needs Chromium, which make up installs only for it). A role
# named twice counts once. An unknown or empty entry fails with a one-line
# message naming it.
set -euo pipefail
readonly ALL_ROLES="scheduler crawler processor extractor web notifier renderer"
readonly DEFAULT_ROLES="scheduler crawler processor extractor web notifier"
roles=${1:-}
if [ -z "$roles" ]; then
  roles=${DEFAULT_ROLES// /,}
fi
declare -A want=()
IFS=',' read -r -a entries <<<"$roles,"
for entry in "${entries[@]}"; do
  entry=${entry// /}
  if [ -z "$entry" ]; then
    echo "ROLES=\"$roles\": an entry is empty; separate roles with single commas, as in ROLES=crawler,processor" >&2
    exit 2
  fi
  case " $ALL_ROLES " in
    *" $entry "*) want[$entry]=1 ;;
    *) echo "ROLES=\"$roles\": unknown role \"$entry\"; want some of: ${ALL_ROLES// /, }" >&2; exit 2 ;;
  esac
done
files=()
for role in $ALL_ROLES; do
  [ -n "${want[$role]:-}" ] && files+=("conf.d/$role.conf")
done
echo "${files[*]}"
