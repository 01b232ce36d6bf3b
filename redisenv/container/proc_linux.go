package container

import (
	"os"
	"strconv"
	"strings"
)

// processStart is when process pid started, in clock ticks since boot
// (field 22 of /proc/pid/stat), or "" when it cannot be read.
func processStart(pid int) string {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces and parentheses: count
	// fields after its closing parenthesis, which is field 3's start.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return ""
	}
	return fields[19] // field 22
}
