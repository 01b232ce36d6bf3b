//go:build 386 || arm || mips || mipsle

package contract

// rlconform is 64-bit only: the contract's limits reach [MaxLimit]
// (2^53-1), which a 32-bit int cannot hold, and its methods take int so
// that callers pass their own counts unconverted. Building for a 32-bit
// platform stops here, with this name in the error (docs/contract.md, "Platforms").
var _ = rlconform_requires_a_64_bit_platform
