#!/usr/bin/env bash
# Make sure the local services portalwatch needs are installed and running on
# loopback, on a Debian/Ubuntu machine without systemd (containers, CI).
#
#   scripts/services.sh ensure [postgres|redis|rabbitmq|supervisor|all]  (default: all)
#   scripts/services.sh ensure chromium    (the browser test's headless Chromium; not in all)
#   scripts/services.sh ensure axe         (the browser test's accessibility checker, axe-core from npm,
#                                           into .cache/axe; not in all)
#   scripts/services.sh ensure-db NAME
#   scripts/services.sh redis-limits   apply maxmemory and eviction policy to a running Redis
#   scripts/services.sh check-go
#
# Idempotent: when everything is already up it only checks (well under 2 s).
# It prints one short line per action it takes, and a final status line.
#
# Environment:
#   PORTALWATCH_SKIP_INSTALL=1      never install packages; fail naming the missing one
#   PORTALWATCH_PG_PORT=5432        PostgreSQL port on 127.0.0.1
#   PORTALWATCH_PG_CLUSTER=main     cluster name used when a cluster must be created
#   PORTALWATCH_PG_VERSION=         cluster version to create (default: newest installed)
#   PORTALWATCH_REDIS_PORT=6379     Redis port on 127.0.0.1
#   PORTALWATCH_REDIS_MAXMEMORY=256mb  Redis memory cap, set when this script starts Redis,
#                                   and by redis-limits on a running Redis that has none
#                                   (or always, when this variable is set)
#   PORTALWATCH_REDIS_POLICY=volatile-lru  Redis eviction policy applied with it
#   PORTALWATCH_RABBITMQ_PORT=5672  RabbitMQ AMQP port on 127.0.0.1
#   PORTALWATCH_RABBITMQ_WAIT=60    seconds to wait for RabbitMQ to come up
#   PORTALWATCH_SERVICES_DIR=       where logs and the Redis pid file go
#                                   (default: ${TMPDIR:-/tmp}/portalwatch-services-UID)
# The variables are prefixed on purpose: plain REDIS_PORT / RABBITMQ_PORT are set
# by Docker links and Kubernetes to values like tcp://10.0.0.3:6379.
set -euo pipefail

ROOT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly ROOT_DIR

PG_PORT=${PORTALWATCH_PG_PORT:-5432}
PG_CLUSTER=${PORTALWATCH_PG_CLUSTER:-main}
PG_VERSION=${PORTALWATCH_PG_VERSION:-}
REDIS_PORT=${PORTALWATCH_REDIS_PORT:-6379}
RABBITMQ_PORT=${PORTALWATCH_RABBITMQ_PORT:-5672}
REDIS_MAXMEMORY=${PORTALWATCH_REDIS_MAXMEMORY:-256mb}
REDIS_POLICY=${PORTALWATCH_REDIS_POLICY:-volatile-lru}
RABBITMQ_WAIT=${PORTALWATCH_RABBITMQ_WAIT:-60}
SKIP_INSTALL=${PORTALWATCH_SKIP_INSTALL:-0}
STATE_DIR=${PORTALWATCH_SERVICES_DIR:-${TMPDIR:-/tmp}/portalwatch-services-$(id -u)}

SUPERVISOR_PIDFILES=(/run/supervisord.pid /var/run/supervisord.pid)
GO_FALLBACK=/usr/local/go/bin/go

APT_UPDATED=0
declare -A UP=() # services found up by preinstall, so the fast path checks each once

say() { printf 'services: %s\n' "$*"; }
die() {
	printf 'services: %s\n' "$*" >&2
	exit 1
}

usage() {
	cat <<'EOF'
usage: scripts/services.sh ensure [postgres|redis|rabbitmq|supervisor|all]
       scripts/services.sh ensure chromium
       scripts/services.sh ensure axe
       scripts/services.sh ensure-db NAME
       scripts/services.sh redis-limits
       scripts/services.sh check-go
EOF
	exit "${1:-2}"
}

for _port in "$PG_PORT" "$REDIS_PORT" "$RABBITMQ_PORT" "$RABBITMQ_WAIT"; do
	[[ $_port =~ ^[0-9]+$ ]] || die "port/wait settings must be numbers (got '$_port')"
done
unset _port
[[ $REDIS_MAXMEMORY =~ ^[0-9]+([kKmMgG][bB]?)?$ ]] ||
	die "PORTALWATCH_REDIS_MAXMEMORY must be a size such as 256mb or 1gb (got '$REDIS_MAXMEMORY')"
case $REDIS_POLICY in
volatile-lru | allkeys-lru | volatile-lfu | allkeys-lfu | volatile-random | allkeys-random | volatile-ttl | noeviction) ;;
*) die "PORTALWATCH_REDIS_POLICY must be a Redis maxmemory-policy such as volatile-lru or allkeys-lru (got '$REDIS_POLICY')" ;;
esac

# ---------------------------------------------------------------- helpers

state_dir() {
	(umask 077 && mkdir -p "$STATE_DIR")
	printf '%s\n' "$STATE_DIR"
}

# The most telling line of a log file (last FATAL/error line, else the last
# non-empty one), for one-line error messages.
last_line() {
	[[ -f $1 ]] || return 0
	local line
	line=$(grep -E 'FATAL|ERROR|[Ee]rror|E: ' "$1" 2>/dev/null | tail -n 1) ||
		line=$(grep -v '^[[:space:]]*$' "$1" 2>/dev/null | tail -n 1) || true
	printf '%s\n' "${line:0:200}"
}

# Run a command as root: directly when root, else through sudo.
as_root() {
	if [[ $(id -u) -eq 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		die "need root (or sudo) to run: $*"
	fi
}

# Run a command as the postgres OS user (for the unix-socket fallback).
as_postgres() {
	if [[ $(id -un) == postgres ]]; then
		"$@"
	elif [[ $(id -u) -eq 0 ]] && command -v runuser >/dev/null 2>&1; then
		runuser -u postgres -- "$@"
	elif [[ $(id -u) -eq 0 ]]; then
		su postgres -s /bin/bash -c "$(printf '%q ' "$@")"
	elif command -v sudo >/dev/null 2>&1; then
		sudo -n -u postgres -- "$@"
	else
		return 1
	fi
}

# Find a command on PATH or in the sbin/lib directories non-root PATHs lack.
find_cmd() {
	local name=$1 dir
	if command -v "$name" 2>/dev/null; then
		return 0
	fi
	for dir in /usr/sbin /sbin /usr/local/sbin; do
		if [[ -x $dir/$name ]]; then
			printf '%s\n' "$dir/$name"
			return 0
		fi
	done
	return 1
}

# Does something accept TCP connections on 127.0.0.1:PORT?
tcp_open() {
	# shellcheck disable=SC2016 # $1 is expanded by the inner bash
	timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1"' _ "$1" 2>/dev/null
}

# Install Debian packages (apt-get update once per run, only when needed).
apt_install() {
	(($# > 0)) || return 0
	if [[ $SKIP_INSTALL == 1 ]]; then
		die "missing Debian package(s): $* (PORTALWATCH_SKIP_INSTALL=1, not installing)"
	fi
	command -v apt-get >/dev/null 2>&1 || die "missing package(s) $* and no apt-get here: install them by hand"
	local log
	log="$(state_dir)/apt.log"
	if ((APT_UPDATED == 0)); then
		: >"$log"
		say "apt-get update"
		as_root apt-get -o DPkg::Lock::Timeout=300 update -q >>"$log" 2>&1 </dev/null ||
			die "apt-get update failed: $(last_line "$log") (log: $log)"
		APT_UPDATED=1
	fi
	say "installing Debian package(s): $*"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 \
		install -y --no-install-recommends "$@" >>"$log" 2>&1 </dev/null ||
		die "apt-get install $* failed: $(last_line "$log") (log: $log)"
}

# ---------------------------------------------------------------- postgres

pg_installed() {
	command -v pg_ctlcluster >/dev/null 2>&1 &&
		command -v pg_lsclusters >/dev/null 2>&1 &&
		command -v pg_isready >/dev/null 2>&1 &&
		command -v psql >/dev/null 2>&1 &&
		compgen -G '/usr/lib/postgresql/*/bin/postgres' >/dev/null
}

# pg_isready exit codes: 0 accepting, 1 rejecting (starting up), 2 no response.
pg_ready() {
	command -v pg_isready >/dev/null 2>&1 || return 2
	local rc=0
	pg_isready -q -h 127.0.0.1 -p "$PG_PORT" -t 3 || rc=$?
	return "$rc"
}

pg_wait_ready() { # seconds
	local i
	for ((i = 0; i < $1 * 2; i++)); do
		pg_ready && return 0
		sleep 0.5
	done
	return 1
}

# Can the postgres superuser connect over TCP without a password prompt?
pg_tcp_ok() {
	PGCONNECT_TIMEOUT=5 psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres \
		-w -X -A -t -q -c 'select 1' >/dev/null 2>&1
}

# "VERSION NAME STATUS" of the local cluster configured on PG_PORT, if any.
pg_cluster_on_port() {
	pg_lsclusters --no-header 2>/dev/null | awk -v p="$PG_PORT" '$3 == p { print $1, $2, $4; exit }'
}

pg_newest_version() {
	local bin
	for bin in /usr/lib/postgresql/*/bin/postgres; do
		[[ -x $bin ]] || continue
		bin=${bin#/usr/lib/postgresql/}
		printf '%s\n' "${bin%%/*}"
	done | sort -V | tail -n 1
}

# Make sure a stopped cluster will listen on 127.0.0.1. (Not via `pg_conftool
# set`: it writes 127.0.0.1 unquoted, which postgresql.conf rejects.)
pg_ensure_listen() { # version name
	local cur conf=/etc/postgresql/$1/$2/postgresql.conf
	cur=$(pg_conftool -s "$1" "$2" show listen_addresses 2>/dev/null) || cur=localhost
	case ",${cur// /}," in
	*,\*,* | *,localhost,* | *,127.0.0.1,* | *,0.0.0.0,*) return 0 ;;
	esac
	[[ -f $conf ]] || die "PostgreSQL cluster $1/$2 has listen_addresses = '$cur' and no $conf: add 127.0.0.1 to it"
	local new=127.0.0.1
	[[ -n ${cur// /} ]] && new="$cur,127.0.0.1"
	as_root sed -i -E 's/^([[:space:]]*listen_addresses([[:space:]]|=))/#\1/' "$conf"
	printf "listen_addresses = '%s'\t# set by portalwatch scripts/services.sh\n" "$new" |
		as_root tee -a "$conf" >/dev/null
	say "set listen_addresses = '$new' in $conf"
}

# Trust loopback TCP connections in the dev cluster's pg_hba.conf, then reload.
pg_trust_loopback() { # version name
	local ver=$1 name=$2 hba i
	hba=$(pg_conftool -s "$ver" "$name" show hba_file 2>/dev/null || true)
	[[ -n $hba ]] || hba=/etc/postgresql/$ver/$name/pg_hba.conf
	if as_root grep -q '^# portalwatch services.sh: trust loopback' "$hba"; then
		die "postgres on 127.0.0.1:$PG_PORT rejects user postgres although $hba already trusts loopback"
	fi
	as_root sed -i '1i # portalwatch services.sh: trust loopback TCP for the local development cluster\nhost    all    all    127.0.0.1/32    trust\nhost    all    all    ::1/128         trust' "$hba"
	(cd / && as_root pg_ctlcluster --skip-systemctl-redirect "$ver" "$name" reload) >/dev/null 2>&1 ||
		die "could not reload PostgreSQL cluster $ver/$name after editing $hba"
	say "configured trust for 127.0.0.1/32 and ::1/128 in $hba and reloaded $ver/$name"
	for ((i = 0; i < 20; i++)); do
		pg_tcp_ok && return 0
		sleep 0.25
	done
	die "postgres on 127.0.0.1:$PG_PORT still rejects user postgres after trusting loopback in $hba"
}

pg_start() {
	local line ver name status log
	line=$(pg_cluster_on_port)
	if [[ -z $line ]]; then
		ver=${PG_VERSION:-$(pg_newest_version)}
		[[ -n $ver ]] || die "no PostgreSQL server binaries under /usr/lib/postgresql"
		name=$PG_CLUSTER
		local other
		other=$(pg_lsclusters --no-header 2>/dev/null | awk -v v="$ver" -v n="$name" '$1 == v && $2 == n { print $3 }')
		if [[ -n $other ]]; then
			die "PostgreSQL cluster $ver/$name uses port $other, not $PG_PORT: set PORTALWATCH_PG_PORT=$other or PORTALWATCH_PG_CLUSTER to another name"
		fi
		log="$(state_dir)/postgres.log"
		(cd / && as_root pg_createcluster --port "$PG_PORT" "$ver" "$name") >"$log" 2>&1 </dev/null ||
			die "pg_createcluster $ver $name failed: $(last_line "$log") (log: $log)"
		say "created PostgreSQL cluster $ver/$name on port $PG_PORT"
		status=down
	else
		read -r ver name status <<<"$line"
	fi

	if [[ $status == down ]]; then
		pg_ensure_listen "$ver" "$name"
		log="$(state_dir)/postgres.log"
		say "starting PostgreSQL cluster $ver/$name (port $PG_PORT)"
		(cd / && as_root pg_ctlcluster --skip-systemctl-redirect "$ver" "$name" start) >"$log" 2>&1 </dev/null ||
			die "pg_ctlcluster $ver $name start failed: $(last_line "$log") (see $log and /var/log/postgresql/)"
	fi

	local wait=30
	[[ $status == down ]] || wait=5 # already running: only give a starting server a moment
	if ! pg_wait_ready "$wait"; then
		if [[ $status == down ]]; then
			die "PostgreSQL cluster $ver/$name started but 127.0.0.1:$PG_PORT does not accept connections (see /var/log/postgresql/)"
		fi
		die "PostgreSQL cluster $ver/$name is running but not on 127.0.0.1:$PG_PORT: add 127.0.0.1 to listen_addresses and restart it"
	fi
}

# Installed and accepting connections on 127.0.0.1 (auth not checked).
pg_running() {
	pg_installed || apt_install postgresql
	pg_ready || pg_start
}

ensure_postgres() {
	pg_tcp_ok && return 0
	pg_running
	pg_tcp_ok && return 0

	local line ver name _status
	line=$(pg_cluster_on_port)
	[[ -n $line ]] || die "postgres on 127.0.0.1:$PG_PORT rejects user postgres and is not a local cluster this script manages"
	read -r ver name _status <<<"$line"
	pg_trust_loopback "$ver" "$name"
}

# ---------------------------------------------------------------- redis

redis_installed() { command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; }

redis_up() {
	command -v redis-cli >/dev/null 2>&1 || return 1
	[[ $(timeout 5 redis-cli -h 127.0.0.1 -p "$REDIS_PORT" ping 2>/dev/null) == PONG ]]
}

redis_start() {
	if tcp_open "$REDIS_PORT"; then
		die "something listens on 127.0.0.1:$REDIS_PORT but does not answer redis PING with PONG"
	fi
	local dir log startlog pidfile i
	dir=$(state_dir)
	log="$dir/redis-$REDIS_PORT.log"
	startlog="$dir/redis-$REDIS_PORT.start.log"
	pidfile="$dir/redis-$REDIS_PORT.pid"
	say "starting redis-server on 127.0.0.1:$REDIS_PORT (pid file $pidfile)"
	redis-server --daemonize yes --bind 127.0.0.1 --port "$REDIS_PORT" --save "" --appendonly no \
		--maxmemory "$REDIS_MAXMEMORY" --maxmemory-policy "$REDIS_POLICY" \
		--pidfile "$pidfile" --logfile "$log" --dir "$dir" </dev/null >"$startlog" 2>&1 ||
		die "redis-server failed to start: $(last_line "$startlog") (log: $startlog)"
	for ((i = 0; i < 20; i++)); do
		redis_up && return 0
		sleep 0.5
	done
	die "redis-server did not answer on 127.0.0.1:$REDIS_PORT within 10 s: $(last_line "$log") (log: $log)"
}

ensure_redis() {
	redis_up && return 0
	redis_installed || apt_install redis-server
	redis_start
}

# Apply the memory cap and eviction policy to the running Redis. A Redis that
# already has a cap keeps it unless PORTALWATCH_REDIS_MAXMEMORY asks for one:
# it may serve others, and its operator chose it.
cmd_redis_limits() {
	redis_up || die "redis does not answer on 127.0.0.1:$REDIS_PORT: run scripts/services.sh ensure redis first"
	local -a cli=(timeout 5 redis-cli -h 127.0.0.1 -p "$REDIS_PORT")
	local current out
	current=$("${cli[@]}" CONFIG GET maxmemory | sed -n 2p)
	if [[ $current != 0 && -z ${PORTALWATCH_REDIS_MAXMEMORY:-} ]]; then
		say "redis keeps its maxmemory of $current bytes (set PORTALWATCH_REDIS_MAXMEMORY to change it)"
	else
		out=$("${cli[@]}" CONFIG SET maxmemory "$REDIS_MAXMEMORY" 2>&1)
		[[ $out == OK ]] || die "redis CONFIG SET maxmemory $REDIS_MAXMEMORY failed: $out"
	fi
	out=$("${cli[@]}" CONFIG SET maxmemory-policy "$REDIS_POLICY" 2>&1)
	[[ $out == OK ]] || die "redis CONFIG SET maxmemory-policy $REDIS_POLICY failed: $out"
	say "redis 127.0.0.1:$REDIS_PORT: maxmemory $("${cli[@]}" CONFIG GET maxmemory | sed -n 2p) bytes, policy $REDIS_POLICY"
}

# ---------------------------------------------------------------- rabbitmq

rabbitmq_installed() { find_cmd rabbitmq-server >/dev/null; }

rabbitmq_up() { tcp_open "$RABBITMQ_PORT"; }

# Is a RabbitMQ node (the default one, or RABBITMQ_NODENAME) already running?
rabbitmq_node_running() {
	local diag
	if diag=$(find_cmd rabbitmq-diagnostics); then
		timeout 30 "$diag" -q check_running >/dev/null 2>&1 </dev/null
	elif diag=$(find_cmd rabbitmqctl); then
		timeout 30 "$diag" -q status >/dev/null 2>&1 </dev/null
	else
		return 1
	fi
}

rabbitmq_start() {
	local server log i
	server=$(find_cmd rabbitmq-server) || die "rabbitmq-server not found after install"
	if rabbitmq_node_running; then
		say "rabbitmq node is running but 127.0.0.1:$RABBITMQ_PORT is not open yet: waiting up to ${RABBITMQ_WAIT}s"
	else
		log="$(state_dir)/rabbitmq.log"
		say "starting rabbitmq-server -detached (AMQP on 127.0.0.1:$RABBITMQ_PORT)"
		local -a envs=()
		if [[ $RABBITMQ_PORT != 5672 ]]; then
			envs=(RABBITMQ_NODE_IP_ADDRESS=127.0.0.1 "RABBITMQ_NODE_PORT=$RABBITMQ_PORT")
		fi
		(cd / && as_root env "${envs[@]}" "$server" -detached) >"$log" 2>&1 </dev/null ||
			die "rabbitmq-server -detached failed: $(last_line "$log") (log: $log)"
	fi
	for ((i = 0; i < RABBITMQ_WAIT * 2; i++)); do
		rabbitmq_up && return 0
		sleep 0.5
	done
	die "rabbitmq did not open 127.0.0.1:$RABBITMQ_PORT within ${RABBITMQ_WAIT}s (see /var/log/rabbitmq/)"
}

ensure_rabbitmq() {
	rabbitmq_up && return 0
	rabbitmq_installed || apt_install rabbitmq-server
	rabbitmq_start
}

# ---------------------------------------------------------------- supervisor

supervisor_installed() { find_cmd supervisord >/dev/null; }

# Pid of a live supervisord named in the Debian package's pid file, if any.
debian_supervisord_pid() {
	local f pid
	for f in "${SUPERVISOR_PIDFILES[@]}"; do
		[[ -r $f ]] || continue
		pid=$(tr -dc '0-9' <"$f")
		[[ -n $pid ]] || continue
		if [[ -r /proc/$pid/cmdline ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q supervisord; then
			printf '%s\n' "$pid"
			return 0
		fi
	done
	return 1
}

ensure_supervisor() {
	supervisor_installed && return 0
	local before after i
	before=$(debian_supervisord_pid || true)
	apt_install supervisor
	supervisor_installed || die "supervisord not found after installing supervisor"
	# The project runs its own supervisord with its own config; the package's
	# postinst may have started the default one (/etc/supervisor/supervisord.conf).
	after=$(debian_supervisord_pid || true)
	if [[ -n $after && $after != "$before" ]]; then
		as_root kill -TERM "$after"
		for ((i = 0; i < 40; i++)); do
			[[ -d /proc/$after ]] || break
			sleep 0.25
		done
		[[ -d /proc/$after ]] && die "the Debian package's supervisord (pid $after) did not stop"
		say "stopped the default supervisord the package started (pid $after)"
	fi
}

# The web program's browser test drives Debian's chromium headless.
chromium_installed() { command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; }

ensure_chromium() {
	chromium_installed && return 0
	apt_install chromium
	chromium_installed || die "chromium not found after installing it"
}

# The browser test runs axe-core, pinned, in that Chromium to check each page's
# accessibility. It comes from npm into the repository's .cache (ignored by
# git); the test reads it from there, or from PORTALWATCH_AXE_JS.
AXE_VERSION=4.10.3
AXE_DIR=$ROOT_DIR/.cache/axe
AXE_JS=$AXE_DIR/node_modules/axe-core/axe.min.js
axe_installed() { [[ -f $AXE_JS ]] && grep -q "axe v$AXE_VERSION" "$AXE_JS"; }

ensure_axe() {
	axe_installed && return 0
	command -v npm >/dev/null 2>&1 || apt_install npm
	command -v npm >/dev/null 2>&1 || die "npm not found after installing it"
	mkdir -p "$AXE_DIR"
	say "installing axe-core $AXE_VERSION from npm into $AXE_DIR"
	npm install --prefix "$AXE_DIR" --no-save --no-audit --no-fund --loglevel=error "axe-core@$AXE_VERSION" >/dev/null ||
		die "npm could not install axe-core@$AXE_VERSION"
	axe_installed || die "axe-core $AXE_VERSION not found at $AXE_JS after installing it"
}

# ---------------------------------------------------------------- commands

# Packages missing for the given services that are not already reachable,
# so that `ensure all` installs them with one apt-get call.
preinstall() {
	local -a pkgs=()
	local svc
	for svc in "$@"; do
		case $svc in
		postgres) if pg_tcp_ok; then UP[$svc]=1; elif ! pg_installed; then pkgs+=(postgresql); fi ;;
		redis) if redis_up; then UP[$svc]=1; elif ! redis_installed; then pkgs+=(redis-server); fi ;;
		rabbitmq) if rabbitmq_up; then UP[$svc]=1; elif ! rabbitmq_installed; then pkgs+=(rabbitmq-server); fi ;;
		supervisor) ;; # installed on its own: its default daemon must be stopped afterwards
		chromium) if chromium_installed; then UP[$svc]=1; fi ;;
		axe) if axe_installed; then UP[$svc]=1; fi ;;
		esac
	done
	apt_install "${pkgs[@]}"
}

status_of() {
	case $1 in
	postgres) printf 'postgres 127.0.0.1:%s' "$PG_PORT" ;;
	redis) printf 'redis 127.0.0.1:%s' "$REDIS_PORT" ;;
	rabbitmq) printf 'rabbitmq 127.0.0.1:%s' "$RABBITMQ_PORT" ;;
	supervisor) printf 'supervisord installed' ;;
	chromium) printf 'chromium installed' ;;
	axe) printf 'axe-core %s installed' "$AXE_VERSION" ;;
	esac
}

cmd_ensure() {
	local what=${1:-all} svc
	local -a svcs
	case $what in
	all) svcs=(postgres redis rabbitmq supervisor) ;;
	postgres | redis | rabbitmq | supervisor | chromium | axe) svcs=("$what") ;;
	*) usage ;;
	esac
	preinstall "${svcs[@]}"
	local summary=""
	for svc in "${svcs[@]}"; do
		[[ -n ${UP[$svc]:-} ]] || "ensure_$svc"
		summary+="${summary:+, }$(status_of "$svc")"
	done
	if [[ $what == all ]]; then
		say "all up: $summary"
	else
		say "up: $summary"
	fi
}

cmd_ensure_db() {
	local db=$1
	[[ $db =~ ^[A-Za-z_][A-Za-z0-9_]{0,62}$ ]] ||
		die "database name must match [A-Za-z_][A-Za-z0-9_]* (got '$db')"
	# Running is enough here: no pg_hba.conf edits, the unix socket is the fallback.
	pg_tcp_ok || pg_running

	local -a psql_cmd
	if pg_tcp_ok; then
		psql_cmd=(psql -h 127.0.0.1 -p "$PG_PORT" -U postgres -d postgres -w -X -A -t -q)
	elif (cd / && as_postgres psql -p "$PG_PORT" -d postgres -X -A -t -q -c 'select 1') >/dev/null 2>&1; then
		psql_cmd=(as_postgres psql -p "$PG_PORT" -d postgres -X -A -t -q)
	else
		die "cannot connect to postgres as superuser (tried TCP 127.0.0.1:$PG_PORT and the unix socket as OS user postgres)"
	fi

	local exists
	exists=$(cd / && "${psql_cmd[@]}" -c "select 1 from pg_database where datname = '$db'")
	if [[ $exists == 1 ]]; then
		say "database $db exists"
		return 0
	fi
	local err
	if ! err=$(cd / && "${psql_cmd[@]}" -v ON_ERROR_STOP=1 -c "create database \"$db\"" 2>&1); then
		# Lost a race with a concurrent run? Then it exists now.
		exists=$(cd / && "${psql_cmd[@]}" -c "select 1 from pg_database where datname = '$db'")
		[[ $exists == 1 ]] || die "create database $db failed: ${err//$'\n'/ }"
	fi
	say "created database $db"
}

# "1.26.0" / "1.26rc1" / "1.26" -> "1 26 0 999" (last field ranks pre-releases lower).
go_version_key() {
	local v=$1 pre=999 maj min patch rest
	if [[ $v =~ ^([0-9]+)\.([0-9]+)(\.([0-9]+))?(.*)$ ]]; then
		maj=${BASH_REMATCH[1]} min=${BASH_REMATCH[2]} patch=${BASH_REMATCH[4]:-0} rest=${BASH_REMATCH[5]}
	else
		return 1
	fi
	if [[ $rest =~ ^beta([0-9]+) ]]; then
		pre=${BASH_REMATCH[1]}
	elif [[ $rest =~ ^rc([0-9]+) ]]; then
		pre=$((100 + BASH_REMATCH[1]))
	fi
	printf '%d %d %d %d\n' "$maj" "$min" "$patch" "$pre"
}

go_version_ge() { # have want
	local -a h w
	read -r -a h <<<"$(go_version_key "$1")"
	read -r -a w <<<"$(go_version_key "$2")"
	local i
	for i in 0 1 2 3; do
		((h[i] > w[i])) && return 0
		((h[i] < w[i])) && return 1
	done
	return 0
}

cmd_check_go() {
	local want
	want=$(awk '$1 == "go" { print $2; exit }' "$ROOT_DIR/go.mod" 2>/dev/null || true)
	[[ -n $want ]] || die "no go directive found in $ROOT_DIR/go.mod"
	go_version_key "$want" >/dev/null || die "cannot parse go directive '$want' in go.mod"
	local hint="install it from https://go.dev/dl/ and put it on PATH"

	local gobin="" onpath=1
	if gobin=$(command -v go 2>/dev/null); then
		:
	elif [[ -x $GO_FALLBACK ]]; then
		gobin=$GO_FALLBACK onpath=0
	else
		die "portalwatch needs Go >= $want (found none): $hint"
	fi

	# Ask the local toolchain itself, from outside the module: inside it, an
	# older go with GOTOOLCHAIN=auto would try to download a newer toolchain.
	local found have
	found=$(cd / && GOTOOLCHAIN=local GOFLAGS='' "$gobin" env GOVERSION 2>/dev/null) || true
	found=${found%% *}
	have=${found#go}
	if [[ -z $found ]] || ! go_version_key "$have" >/dev/null 2>&1; then
		die "portalwatch needs Go >= $want (found $gobin, version unknown: '${found:-no output}'): $hint"
	fi
	if ! go_version_ge "$have" "$want"; then
		die "portalwatch needs Go >= $want (found $found at $gobin): $hint"
	fi
	if ((onpath)); then
		say "Go ok: $found >= $want ($gobin)"
	else
		say "Go ok: $found >= $want, but $gobin is not on PATH: add ${gobin%/go} to PATH"
	fi
}

main() {
	case ${1:-} in
	ensure)
		(($# <= 2)) || usage
		cmd_ensure "${2:-all}"
		;;
	ensure-db)
		(($# == 2)) || usage
		cmd_ensure_db "$2"
		;;
	redis-limits)
		(($# == 1)) || usage
		cmd_redis_limits
		;;
	check-go)
		(($# == 1)) || usage
		cmd_check_go
		;;
	-h | --help | help) usage 0 ;;
	*) usage ;;
	esac
}

# Only run when executed, so tests can source the functions.
if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	main "$@"
fi
