// Package engine runs rlconform's catalogue: the runner (spec by spec,
// bounded, judged), the harness a spec body drives, the timeline a failure
// explains itself with, the diagnosis, the specs themselves and identify's
// probes. Package suite is its facade; nothing else imports it but
// suite/ginkgo.
//
// The pieces: spec.go (ids, levels, what a spec needs), core_specs.go,
// strict_specs.go, robust_specs.go, http_specs.go, differential.go,
// linearizable.go, stepback.go and keyhygiene.go (the catalogue),
// harness.go and timeline.go (what a spec body drives, and how a failure
// explains itself), runner.go and config.go (running specs, the
// configuration and the -rlconform.* flags), diagnose.go (what the answers
// say of the algorithms a limiter may be), identify.go (identify's probes
// and replays), entry.go (Check, Run and the session a test framework
// drives).
package engine
