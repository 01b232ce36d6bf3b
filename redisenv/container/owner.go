package container

import (
	"os"
	"strconv"
	"strings"
)

// owner is this process's OwnerLabel: hostname/pid/start.
func owner() string {
	hostname, _ := os.Hostname()
	pid := os.Getpid()
	return hostname + "/" + strconv.Itoa(pid) + "/" + processStart(pid)
}

// ownerAlive reports whether the process an OwnerLabel names may still
// run. Another machine's process, or a label that does not parse, counts as
// alive: only what is known to have ended is swept.
func ownerAlive(label string) bool {
	parts := strings.Split(label, "/")
	if len(parts) != 3 {
		return true
	}
	hostname, _ := os.Hostname()
	if parts[0] != hostname {
		return true
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return true
	}
	if !processAlive(pid) {
		return false
	}
	// The pid lives; it is the owner unless it was reused by another
	// process (a different start time, where the system tells it).
	start := processStart(pid)
	return parts[2] == "" || start == "" || parts[2] == start
}
