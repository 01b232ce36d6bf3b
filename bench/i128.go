package bench

import "math/bits"

// i128 is a signed 128-bit integer (two's complement), enough for the
// bounds' products: a limit up to 2^53 times a span in ns up to 2^63, or a
// window in ns times a count, exactly.
type i128 struct {
	hi int64
	lo uint64
}

// mul128 is a × b for non-negative a and b.
func mul128(a, b int64) i128 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return i128{int64(hi), lo}
}

func (x i128) add(y i128) i128 {
	lo, carry := bits.Add64(x.lo, y.lo, 0)
	hi, _ := bits.Add64(uint64(x.hi), uint64(y.hi), carry)
	return i128{int64(hi), lo}
}

func (x i128) sub(y i128) i128 {
	lo, borrow := bits.Sub64(x.lo, y.lo, 0)
	hi, _ := bits.Sub64(uint64(x.hi), uint64(y.hi), borrow)
	return i128{int64(hi), lo}
}

// cmp is -1, 0 or +1 as x is less than, equal to or greater than y.
func (x i128) cmp(y i128) int {
	switch {
	case x.hi < y.hi:
		return -1
	case x.hi > y.hi:
		return 1
	case x.lo < y.lo:
		return -1
	case x.lo > y.lo:
		return 1
	}
	return 0
}

// floorDiv is ⌊x / d⌋ for x ≥ 0 and d > 0, saturated at the largest int.
func (x i128) floorDiv(d int64) int {
	if x.hi < 0 {
		return 0
	}
	if uint64(x.hi) >= uint64(d) {
		return int(^uint(0) >> 1)
	}
	q, _ := bits.Div64(uint64(x.hi), x.lo, uint64(d))
	if q > uint64(^uint(0)>>1) {
		return int(^uint(0) >> 1)
	}
	return int(q)
}

// mulSigned is a × b for a ≥ 0 and any b but the least int64.
func mulSigned(a, b int64) i128 {
	if b >= 0 {
		return mul128(a, b)
	}
	return i128{}.sub(mul128(a, -b))
}
