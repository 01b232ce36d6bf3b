// Package engine runs a catalogue of conformance specs on a target: the
// runner (spec by spec, each bounded and judged), the Harness a spec's
// body drives, the timeline a failure explains itself with, the diagnosis
// of what a failing limiter really is, and identify's probes. It holds no
// spec of the catalogue: package specs does, and package suite, the
// facade, hands it to the engine (specs.All().Check(...)).
//
// The pieces: spec.go (Spec, Catalogue, levels and needs), harness.go and
// timeline.go (what a spec body drives, and how a failure explains
// itself), runner.go and config.go (running specs, the configuration and
// the -rlconform.* flags), diagnose.go (what the answers say of the
// algorithms a limiter may be), identify.go (identify's probes and
// replays), entry.go (Check, Run and the Session a test framework drives).
package engine
