#!/bin/sh
# redis-pidfile.sh: a --store-fault command for a local redis-server
# found by its pid file. rlconform runs it as
#
#   redis-pidfile.sh stop     stop the server (SIGTERM), wait until it no
#                             longer answers
#   redis-pidfile.sh freeze   freeze it (SIGSTOP): connections open, and hang
#   redis-pidfile.sh resume   wake a frozen server (SIGCONT), or start a
#                             stopped one again; return once it answers PING
#
# configured by its environment:
#
#   REDIS_PIDFILE  the pid file the server writes (its --pidfile; a
#                  daemonized redis-server writes one by default),
#                  default /var/run/redis/redis-server.pid
#   REDIS_START    the command that starts it again, detached (it must
#                  return: daemonize yes), default
#                  "redis-server /etc/redis/redis.conf"
#   REDIS_PING     the command that asks it for PONG, default "redis-cli ping"
#
#   rlconform run --endpoint http://127.0.0.1:8080/ --identity header:X-User \
#     --store-fault 'sh examples/store-fault/redis-pidfile.sh'
#
# An OS service manager does the same: systemctl stop redis, systemctl
# kill -s STOP redis, systemctl kill -s CONT redis / systemctl start redis.
set -eu
pidfile=${REDIS_PIDFILE:-/var/run/redis/redis-server.pid}
start=${REDIS_START:-redis-server /etc/redis/redis.conf}
ping=${REDIS_PING:-redis-cli ping}

pid() { [ -s "$pidfile" ] && cat "$pidfile"; }
alive() { p=$(pid) && kill -0 "$p" 2>/dev/null; }

# wait_for COND: poll COND every 50ms, for at most 10s.
wait_for() {
	i=0
	until eval "$1"; do
		i=$((i + 1))
		if [ "$i" -gt 200 ]; then
			echo "redis-pidfile.sh: gave up after 10s waiting for: $1" >&2
			exit 1
		fi
		sleep 0.05
	done
}

case ${1:-} in
stop)
	p=$(pid) || { echo "redis-pidfile.sh: no pid in $pidfile" >&2; exit 1; }
	kill -CONT "$p" 2>/dev/null || true # a frozen server cannot stop
	kill -TERM "$p"
	# Gone once it refuses connections (its process may linger as a
	# zombie, which kill -0 still finds, until its parent reaps it).
	wait_for '! eval "$ping" >/dev/null 2>&1'
	;;
freeze)
	p=$(pid) || { echo "redis-pidfile.sh: no pid in $pidfile" >&2; exit 1; }
	kill -STOP "$p"
	;;
resume)
	if alive; then
		kill -CONT "$(pid)"
	else
		eval "$start"
	fi
	wait_for '[ "$(eval "$ping" 2>/dev/null)" = PONG ]'
	;;
*)
	echo "usage: redis-pidfile.sh stop|freeze|resume" >&2
	exit 2
	;;
esac
