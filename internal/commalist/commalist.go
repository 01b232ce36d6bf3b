// Package commalist is a command-line flag of comma-separated values that
// may also be repeated: -id core/,strict/reset-race -id robust/.
package commalist

import "strings"

// List is the values given so far; it implements flag.Value.
type List []string

func (l *List) String() string { return strings.Join(*l, ",") }

// Set adds the comma-separated values of v, trimmed, skipping empty ones.
func (l *List) Set(v string) error {
	for _, x := range strings.Split(v, ",") {
		if x = strings.TrimSpace(x); x != "" {
			*l = append(*l, x)
		}
	}
	return nil
}
