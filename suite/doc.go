// Package suite grades a rate limiter with rlconform's catalogue of
// conformance specs: it is the facade to the grader.
//
// A target (Target) is a name, the capabilities it declares and a factory of
// instances; the catalogue's specs drive those instances and compare every
// answer with the executable model (package model). Three entry points run
// it, all judged by one verdict (result.Report.Verdict):
//
//   - Run(t, cfg, target): one call in a go test, one subtest per spec id,
//     in the style of fstest.TestFS; -rlconform.* flags override cfg;
//   - Check(ctx, cfg, target): outside go test, returning a result.Report
//     (the rlconform command uses it);
//   - Register, in package suite/ginkgo: the same catalogue in the caller's
//     own Ginkgo tree.
//
// Identify names the algorithm a target's answers show. Results, reports
// and verdicts are in package result, built-in targets in package targets,
// rendering in package report; docs/architecture.md draws how the packages
// depend on each other.
package suite
