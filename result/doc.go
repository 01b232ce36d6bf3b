// Package result holds what a conformance run found: each spec's Result,
// the Report of a run, and the one Verdict that every entry point and the
// command line judge it by. It is a leaf: it imports none of rlconform's
// other packages, so that tools rendering reports need nothing else.
package result
