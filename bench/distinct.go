package bench

import (
	"math"
	"math/bits"
)

// distinctExact bounds the exact count of distinct keys: past it, a
// HyperLogLog estimates the count in a fixed 16 KiB.
const distinctExact = 1 << 16

// hllBits is the HyperLogLog's precision: 2^14 registers, a standard
// error of 1.04/√2^14, about 0.8%.
const hllBits = 14

// distinct counts distinct keys (users) in bounded memory: exactly up to
// distinctExact of them, then estimated by a HyperLogLog (Flajolet et
// al., 2007). The zero value is ready.
type distinct struct {
	exact map[uint64]struct{}
	hll   []uint8 // nil while the count is exact
}

// add counts key.
func (d *distinct) add(key []byte) {
	h := hash64(key)
	if d.hll != nil {
		d.addHLL(h)
		return
	}
	if d.exact == nil {
		d.exact = map[uint64]struct{}{}
	}
	d.exact[h] = struct{}{}
	if len(d.exact) > distinctExact {
		d.hll = make([]uint8, 1<<hllBits)
		for h := range d.exact {
			d.addHLL(h)
		}
		d.exact = nil
	}
}

func (d *distinct) addHLL(h uint64) {
	i := h >> (64 - hllBits)
	rank := uint8(bits.LeadingZeros64(h<<hllBits|1<<(hllBits-1)) + 1)
	d.hll[i] = max(d.hll[i], rank)
}

// count is how many distinct keys were added, and whether it is an
// estimate.
func (d *distinct) count() (int64, bool) {
	if d.hll == nil {
		return int64(len(d.exact)), false
	}
	m := float64(len(d.hll))
	sum, zeros := 0.0, 0
	for _, r := range d.hll {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	e := 0.7213 / (1 + 1.079/m) * m * m / sum
	if e <= 2.5*m && zeros > 0 {
		e = m * math.Log(m/float64(zeros)) // few keys: linear counting
	}
	return int64(math.Round(e)), true
}

// hash64 is FNV-1a of b, its bits mixed by SplitMix64's finaliser (the
// HyperLogLog reads its top and its leading zeros).
func hash64(b []byte) uint64 {
	h := uint64(14695981039346656037)
	for _, c := range b {
		h ^= uint64(c)
		h *= 1099511628211
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	return h ^ h>>31
}
