// Package plural writes a count with its noun: "1 spec", "3 specs".
package plural

import "strconv"

// Count is n and thing, with an s when n is not 1: "1 spec", "0 specs",
// "3 specs". thing is a noun whose plural takes an s.
func Count[T ~int | ~int64](n T, thing string) string {
	s := strconv.FormatInt(int64(n), 10) + " " + thing
	if n != 1 {
		s += "s"
	}
	return s
}
