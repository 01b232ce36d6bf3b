#!/bin/sh
# docker.sh: a --store-fault command for a Redis in a Docker container.
# rlconform runs it as
#
#   docker.sh stop     stop the container (docker stop)
#   docker.sh freeze   freeze it (docker pause: the cgroup freezer, as SIGSTOP)
#   docker.sh resume   unpause a paused container, or start a stopped one;
#                      return once Redis in it answers PING
#
# configured by its environment: REDIS_CONTAINER, the container's name or
# id (default redis). A container started without a volume comes back
# empty after stop, as a server without persistence does.
#
#   docker run -d --name redis -p 6379:6379 redis:7-alpine
#   rlconform run --endpoint http://127.0.0.1:8080/ --identity header:X-User \
#     --store-fault 'sh examples/store-fault/docker.sh'
set -eu
c=${REDIS_CONTAINER:-redis}

case ${1:-} in
stop)
	docker stop --time 1 "$c" >/dev/null
	;;
freeze)
	docker pause "$c" >/dev/null
	;;
resume)
	if [ "$(docker inspect --format '{{.State.Paused}}' "$c")" = true ]; then
		docker unpause "$c" >/dev/null
	else
		docker start "$c" >/dev/null
	fi
	i=0
	until [ "$(docker exec "$c" redis-cli ping 2>/dev/null)" = PONG ]; do
		i=$((i + 1))
		if [ "$i" -gt 200 ]; then
			echo "docker.sh: Redis in $c did not answer PING within 10s" >&2
			exit 1
		fi
		sleep 0.05
	done
	;;
*)
	echo "usage: docker.sh stop|freeze|resume" >&2
	exit 2
	;;
esac
