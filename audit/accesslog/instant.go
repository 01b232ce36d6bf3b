package accesslog

import (
	"bytes"
	"time"
)

// The instants a log may hold: from 1970 to 2200, as Unix ns (far from
// where an int64 wraps).
const (
	minInstant = time.Duration(0)
	maxInstant = time.Duration(7_258_118_400_000_000_000) // 2200-01-01 UTC
	maxSpan    = 24 * time.Hour                           // the longest request
)

// decimal reads a non-negative decimal number (digits, a point, digits)
// in a unit of unit ns: its value in ns (truncated) and its resolution,
// the unit of its last digit (at least 1ns). ok is false for anything
// else, or past maxInstant.
func decimal(b []byte, unit time.Duration) (v, res time.Duration, ok bool) {
	if len(b) == 0 || len(b) > 40 {
		return 0, 0, false
	}
	whole, i := int64(0), 0
	for ; i < len(b) && b[i] != '.'; i++ {
		c := b[i]
		if c < '0' || c > '9' || whole > int64(maxInstant)/10 {
			return 0, 0, false
		}
		whole = whole*10 + int64(c-'0')
	}
	if i == 0 || whole > int64(maxInstant/unit) {
		return 0, 0, false
	}
	v, res = time.Duration(whole)*unit, unit
	if i == len(b) {
		return v, res, true
	}
	if i == len(b)-1 {
		return 0, 0, false // "12."
	}
	for _, c := range b[i+1:] {
		if c < '0' || c > '9' {
			return 0, 0, false
		}
		if res >= 10 {
			res /= 10
			v += time.Duration(c-'0') * res
		}
	}
	if v >= maxInstant {
		return 0, 0, false
	}
	return v, max(res, 1), true
}

// unixAuto reads a Unix timestamp whose unit its size tells: seconds
// below 10^11 (the year 5138), then milliseconds below 10^14,
// microseconds below 10^17, else nanoseconds.
func unixAuto(b []byte) (v, res time.Duration, ok bool) {
	digits := bytes.IndexByte(b, '.')
	if digits < 0 {
		digits = len(b)
	}
	unit := time.Nanosecond
	switch {
	case digits <= 11:
		unit = time.Second
	case digits <= 14:
		unit = time.Millisecond
	case digits <= 17:
		unit = time.Microsecond
	}
	return decimal(b, unit)
}

// dateCache keeps the Unix instant of the last date read, to read the
// next line's (most often the same day) without time.Date.
type dateCache struct {
	y, m, d int
	loc     *time.Location
	off     int // the zone's offset, in s, for a zone given by offset
	at      time.Duration
}

// day is the instant of midnight (UTC, less the offset east) of y-m-d,
// or of local midnight in loc when loc is not nil.
func (c *dateCache) day(y, m, d int, loc *time.Location, offset int) time.Duration {
	if c.at != 0 && c.y == y && c.m == m && c.d == d && c.loc == loc && c.off == offset {
		return c.at
	}
	var at time.Duration
	if loc != nil {
		at = time.Duration(time.Date(y, time.Month(m), d, 0, 0, 0, 0, loc).UnixNano())
	} else {
		at = time.Duration(time.Date(y, time.Month(m), d, 0, 0, 0, 0, time.UTC).UnixNano()) - time.Duration(offset)*time.Second
	}
	*c = dateCache{y: y, m: m, d: d, loc: loc, off: offset, at: at}
	return at
}

// num reads the n digits at b[i:].
func num(b []byte, i, n int) (int, bool) {
	if i+n > len(b) {
		return 0, false
	}
	v := 0
	for _, c := range b[i : i+n] {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

// fraction reads ".ddd" at b[i:] (any number of digits, or none): its
// value in ns, its resolution (1s without digits), and where it ends.
func fraction(b []byte, i int) (v, res time.Duration, end int) {
	res = time.Second
	if i >= len(b) || (b[i] != '.' && b[i] != ',') {
		return 0, res, i
	}
	i++
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		if res >= 10 {
			res /= 10
			v += time.Duration(b[i]-'0') * res
		}
	}
	return v, max(res, 1), i
}

// zone reads "Z", "±hh:mm" or "±hhmm" at b[i:]: its offset east in
// seconds, and where it ends.
func zone(b []byte, i int) (offset, end int, ok bool) {
	if i < len(b) && (b[i] == 'Z' || b[i] == 'z') {
		return 0, i + 1, true
	}
	if i >= len(b) || (b[i] != '+' && b[i] != '-') {
		return 0, i, false
	}
	sign := 1
	if b[i] == '-' {
		sign = -1
	}
	h, ok1 := num(b, i+1, 2)
	j := i + 3
	if j < len(b) && b[j] == ':' {
		j++
	}
	m, ok2 := num(b, j, 2)
	if !ok1 || !ok2 || h > 23 || m > 59 {
		return 0, i, false
	}
	return sign * (h*3600 + m*60), j + 2, true
}

// clock reads "hh:mm:ss" at b[i:] into seconds of the day.
func clock(b []byte, i int) (int, bool) {
	h, ok1 := num(b, i, 2)
	m, ok2 := num(b, i+3, 2)
	s, ok3 := num(b, i+6, 2)
	if !ok1 || !ok2 || !ok3 || b[i+2] != ':' || b[i+5] != ':' || h > 23 || m > 59 || s > 60 {
		return 0, false
	}
	return h*3600 + m*60 + s, true
}

// rfc3339 reads "2006-01-02T15:04:05[.frac](Z|±hh:mm)" (a space for the
// T, and a zone without its colon, too): the instant and its resolution.
// Without a zone, the instant is read in loc (nil: fails).
func (c *dateCache) rfc3339(b []byte, loc *time.Location) (v, res time.Duration, ok bool) {
	y, ok1 := num(b, 0, 4)
	m, ok2 := num(b, 5, 2)
	d, ok3 := num(b, 8, 2)
	if !ok1 || !ok2 || !ok3 || len(b) < 19 || b[4] != '-' || b[7] != '-' || (b[10] != 'T' && b[10] != 't' && b[10] != ' ') || m < 1 || m > 12 || d < 1 || d > 31 {
		return 0, 0, false
	}
	secs, ok := clock(b, 11)
	if !ok {
		return 0, 0, false
	}
	frac, res, i := fraction(b, 19)
	offset, end, hasZone := zone(b, i)
	switch {
	case hasZone && end == len(b):
		v = c.day(y, m, d, nil, offset)
	case !hasZone && i == len(b) && loc != nil:
		v = c.day(y, m, d, loc, 0)
	default:
		return 0, 0, false
	}
	v += time.Duration(secs)*time.Second + frac
	return v, res, v >= minInstant && v < maxInstant
}

var months = [12]string{"Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"}

// clf reads "02/Jan/2006:15:04:05[.frac][ -0700]" (nginx's $time_local,
// HAProxy's %t and %tr): the instant and its resolution; without a zone
// it is read in loc.
func (c *dateCache) clf(b []byte, loc *time.Location) (v, res time.Duration, ok bool) {
	d, ok1 := num(b, 0, 2)
	y, ok2 := num(b, 7, 4)
	if !ok1 || !ok2 || len(b) < 20 || b[2] != '/' || b[6] != '/' || b[11] != ':' || d < 1 || d > 31 {
		return 0, 0, false
	}
	m := 0
	for k, name := range months {
		if string(b[3:6]) == name {
			m = k + 1
		}
	}
	secs, ok := clock(b, 12)
	if m == 0 || !ok {
		return 0, 0, false
	}
	frac, res, i := fraction(b, 20)
	switch {
	case i == len(b):
		v = c.day(y, m, d, loc, 0)
	case b[i] == ' ':
		offset, end, hasZone := zone(b, i+1)
		if !hasZone || end != len(b) {
			return 0, 0, false
		}
		v = c.day(y, m, d, nil, offset)
	default:
		return 0, 0, false
	}
	v += time.Duration(secs)*time.Second + frac
	return v, res, v >= minInstant && v < maxInstant
}

// span checks an interval read: from start to end, within the instants a
// log may hold, at most a day long.
func span(start, end time.Duration) bool {
	return start >= minInstant && start <= end && end < maxInstant && end-start <= maxSpan
}
