// Package suite is rlconform's catalogue of conformance specs and the
// runner that grades a limiter with them.
//
// A target (Target) is a name, the capabilities it declares and a factory of
// instances; the catalogue's specs drive those instances and compare every
// answer with the executable model (package model). Three entry points run
// it, all judged by one verdict (Report.Verdict):
//
//   - Run(t, cfg, target): one call in a go test, one subtest per spec id,
//     in the style of fstest.TestFS; -rlconform.* flags override cfg;
//   - Register(cfg, targets...): the same catalogue in the caller's own
//     Ginkgo tree;
//   - Check(ctx, cfg, target): outside go test, returning a Report (the
//     rlconform command uses it).
//
// The pieces: spec.go (levels, ids, what a spec needs), core_specs.go,
// strict_specs.go, robust_specs.go, differential.go, linearizable.go and
// realtime_specs.go (the catalogue), harness.go and timeline.go (what a
// spec body drives, and how a failure explains itself), runner.go and
// config.go (running specs, the configuration), result.go (statuses,
// structured failures, the verdict), entry.go (the three entry points).
// Built-in targets are in package targets, rendering in package report.
package suite
