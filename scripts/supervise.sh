#!/usr/bin/env bash
# Runs portalwatch's supervisord for `make up`, `make down` and `make status`:
#
#   scripts/supervise.sh record        merge this shell's settings into the recorded ones
#   scripts/supervise.sh start INCLUDE CRAWLERS [EXTRACTORS]
#                                      (re)start supervisord with the roles' programs
#   scripts/supervise.sh stop          stop the programs and supervisord, and wait for them
#   scripts/supervise.sh status        the programs' states; exit 3 when not running
#
# Settings: `make up` records the variables the programs read (DATABASE_URL,
# AMQP_URL, REDIS_URL, PORTALWATCH_*) in deploy/supervisor/run/environment,
# readable by its owner only. A later `make up` keeps what was recorded and
# takes this shell's values over it, so PORTALWATCH_ALLOW_PRIVATE=true given
# once stays; UNSET=NAME[,NAME...] drops recorded variables. The programs read
# the file at their start (scripts/run-program.sh), and so does watchctl.
# Without a PORTALWATCH_SECRETS_KEY (recorded, in this shell or in
# deploy/portalwatch.env) one is made and recorded, so that pages can send a
# cookie; machines of one installation must share it (README, Secrets).
# Without a PORTALWATCH_DATA_DIR one is chosen (/var/lib/portalwatch for
# root, ~/.local/share/portalwatch otherwise), recorded and created, with
# the archive directory in it.
set -euo pipefail

ROOT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SUP_DIR=$ROOT_DIR/deploy/supervisor
CONF=$SUP_DIR/supervisord.conf
PIDFILE=$SUP_DIR/run/supervisord.pid
SETTINGS=$SUP_DIR/run/environment
# Longer than any program's stopwaitsecs (30 s) plus supervisord's own exit.
STOP_WAIT=${PORTALWATCH_SUPERVISOR_STOP_WAIT:-45}

ctl() { supervisorctl -c "$CONF" "$@"; }

# running prints the pid of a live supervisord of this tree, if any.
running() {
  local pid
  [ -f "$PIDFILE" ] || return 1
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  echo "$pid"
}

# stop asks supervisord to shut down and waits until its process is gone:
# `supervisorctl pid` stops answering while supervisord still stops its
# programs (SHUTDOWN_STATE), and a new supervisord started then finds the
# socket taken and exits.
stop() {
  local pid
  pid=$(running) || { rm -f "$SUP_DIR/run/supervisor.sock"; return 0; }
  ctl shutdown >/dev/null 2>&1 || kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 $((STOP_WAIT * 5))); do
    kill -0 "$pid" 2>/dev/null || { rm -f "$SUP_DIR/run/supervisor.sock"; return 0; }
    sleep 0.2
  done
  echo "supervisord (pid $pid) is still stopping after ${STOP_WAIT}s; see $SUP_DIR/logs/supervisord.log" >&2
  return 1
}

redact() { sed -E -e 's#(://[^:/@]*:)[^@]*@#\1xxxxx@#g' -e 's#^(PORTALWATCH_SECRETS_(OLD_)?KEYS?=).+#\1(set)#'; }

# newKey prints 32 random bytes in base64, a PORTALWATCH_SECRETS_KEY.
newKey() {
  if command -v openssl >/dev/null 2>&1; then
    openssl rand -base64 32
  else
    head -c 32 /dev/urandom | base64
  fi
}

record() {
  mkdir -p "$SUP_DIR/run" "$SUP_DIR/logs"
  declare -A value=()
  local order=() name line
  if [ -f "$SETTINGS" ]; then
    while IFS= read -r line; do
      name=${line%%=*}
      [ -n "$name" ] && [ "$name" != "$line" ] || continue
      [ -n "${value[$name]+set}" ] || order+=("$name")
      value[$name]=${line#*=}
    done <"$SETTINGS"
  fi
  while IFS= read -r line; do
    name=${line%%=*}
    [ -n "${value[$name]+set}" ] || order+=("$name")
    value[$name]=${line#*=}
  done < <(env | grep -E '^(DATABASE_URL|DATABASE_READ_URL|AMQP_URL|REDIS_URL|PORTALWATCH_[A-Z_]+)=' | grep -vE '^PORTALWATCH_SUPERVISOR_' || true)
  local unset=${UNSET:-}
  IFS=',' read -r -a drop <<<"$unset"
  for name in "${drop[@]}"; do
    name=${name// /}
    [ -n "$name" ] || continue
    if [ -z "${value[$name]+set}" ]; then
      echo "UNSET=$unset: $name is not recorded" >&2
    fi
    unset "value[$name]"
  done
  if [ -z "${value[PORTALWATCH_SECRETS_KEY]:-}" ] &&
    ! grep -qE '^[[:space:]]*(export[[:space:]]+)?PORTALWATCH_SECRETS_KEY=.' "$ROOT_DIR/deploy/portalwatch.env" 2>/dev/null; then
    [ -n "${value[PORTALWATCH_SECRETS_KEY]+set}" ] || order+=(PORTALWATCH_SECRETS_KEY)
    value[PORTALWATCH_SECRETS_KEY]=$(newKey)
    echo "made a PORTALWATCH_SECRETS_KEY for the secret headers of pages (Cookie, Authorization); give the same key to every machine of this installation"
  fi
  # A persistent data directory (the archive of pages as fetched is in
  # it), never a temporary one: recorded once, so every later make up and
  # every program use the same.
  if [ -z "${value[PORTALWATCH_DATA_DIR]:-}" ]; then
    [ -n "${value[PORTALWATCH_DATA_DIR]+set}" ] || order+=(PORTALWATCH_DATA_DIR)
    if [ "$(id -u)" = 0 ]; then
      value[PORTALWATCH_DATA_DIR]=/var/lib/portalwatch
    else
      value[PORTALWATCH_DATA_DIR]=${XDG_DATA_HOME:-$HOME/.local/share}/portalwatch
    fi
  fi
  local archive_dir=${value[PORTALWATCH_ARCHIVE_DIR]:-${value[PORTALWATCH_DATA_DIR]}/archive}
  if ! mkdir -p "${value[PORTALWATCH_DATA_DIR]}" "$archive_dir"; then
    echo "cannot create the data directory ${value[PORTALWATCH_DATA_DIR]} or the archive $archive_dir: set PORTALWATCH_DATA_DIR (or PORTALWATCH_ARCHIVE_DIR) to a directory this user may write" >&2
    return 1
  fi
  # Readable by its owner only from its first byte: the URLs and the key hold secrets.
  (
    umask 077
    : >"$SETTINGS.new"
    for name in "${order[@]}"; do
      [ -n "${value[$name]+set}" ] && printf '%s=%s\n' "$name" "${value[$name]}" >>"$SETTINGS.new"
    done
    mv "$SETTINGS.new" "$SETTINGS"
  )
  if [ -s "$SETTINGS" ]; then
    echo "settings in effect (deploy/supervisor/run/environment; UNSET=NAME drops one):"
    redact <"$SETTINGS" | sed 's/^/  /'
  else
    echo "settings in effect: the defaults (no variable recorded)"
  fi
}

start() {
  local include=$1 crawlers=$2 extractors=${3:-1} pid
  if pid=$(running); then
    echo "restarting supervisord (pid $pid) so that the settings apply"
    stop
  fi
  mkdir -p "$SUP_DIR/run" "$SUP_DIR/logs"
  PORTALWATCH_SUPERVISOR_INCLUDE="$include" PORTALWATCH_SUPERVISOR_CRAWLERS="$crawlers" \
    PORTALWATCH_SUPERVISOR_EXTRACTORS="$extractors" supervisord -c "$CONF"
  # Each program leaves STARTING after its startsecs, or fails.
  local states
  for _ in $(seq 1 150); do
    states=$(ctl status 2>/dev/null || true)
    if [ -n "$states" ] && ! grep -qE ' (STARTING|BACKOFF) ' <<<"$states"; then
      break
    fi
    sleep 0.2
  done
  ctl status || true
  if grep -qvE ' RUNNING ' <<<"$(ctl status 2>/dev/null)"; then
    echo "some programs are not RUNNING: \`supervisorctl -c $CONF tail PROGRAM stderr\` says why" >&2
    return 1
  fi
}

status() {
  if ! running >/dev/null; then
    echo "portalwatch is not running (make up starts it)"
    return 3
  fi
  ctl status
}

case ${1:-} in
  record) record ;;
  start) start "${2:?start INCLUDE CRAWLERS [EXTRACTORS]}" "${3:?start INCLUDE CRAWLERS [EXTRACTORS]}" "${4:-1}" ;;
  stop)
    if running >/dev/null; then stop && echo "portalwatch stopped"; else echo "supervisord is not running"; fi ;;
  status) status ;;
  *) echo "usage: scripts/supervise.sh record|start INCLUDE CRAWLERS [EXTRACTORS]|stop|status" >&2; exit 2 ;;
esac
