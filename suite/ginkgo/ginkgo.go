// Package ginkgo adds rlconform's catalogue to a caller's Ginkgo tree. It
// is the only package of rlconform that imports Ginkgo: a caller of
// suite.Run or suite.Check links none of it.
package ginkgo

import (
	"github.com/onsi/ginkgo/v2"

	"github.com/rlconform/rlconform/internal/engine"
	"github.com/rlconform/rlconform/internal/specs"
	"github.com/rlconform/rlconform/suite"
)

// Register adds the catalogue for each target to the caller's Ginkgo tree,
// one ordered container per target with one It per spec, labelled with the
// spec's level and needs (label filters such as `--ginkgo.label-filter=core`
// work). Call it before RunSpecs (at package level, or in the test function),
// once: Ginkgo runs one RunSpecs per process, which the caller's suite owns.
// The -rlconform.* flags (see suite.Run) are read when the specs run, so
// they work with either form; at package level every spec is in the tree,
// and those the run does not select are skipped, saying so. Results are
// judged as by suite.Run. An invalid Config fails the container.
//
// Typical usage:
//
//	var _ = rlcginkgo.Register(suite.Config{}, myTarget)
//
//	func TestMine(t *testing.T) { RegisterFailHandler(Fail); RunSpecs(t, "mine") }
func Register(cfg suite.Config, targets ...suite.Target) bool {
	tree, verr := specs.All().Tree(cfg)
	for _, target := range targets {
		ginkgo.Describe("rlconform "+target.Name, ginkgo.Ordered, ginkgo.ContinueOnFailure, func() {
			var s *engine.Session
			ginkgo.BeforeAll(func(ctx ginkgo.SpecContext) {
				if verr != nil {
					ginkgo.Fail("rlconform: " + verr.Error())
				}
				var err error
				if s, err = specs.All().Start(ctx, cfg, target); err != nil {
					ginkgo.Fail("rlconform: " + err.Error())
				}
				ginkgo.GinkgoWriter.Printf("rlconform: grading %s, %s\n", target.Name, s.Reproduce(""))
				ginkgo.DeferCleanup(s.Close)
			})
			if verr != nil {
				ginkgo.It("has a valid configuration", func() {})
				return
			}
			for _, sp := range tree {
				ginkgo.It(sp.Title, ginkgo.Label(sp.Labels...), func(ctx ginkgo.SpecContext) {
					switch act, msg := s.Grade(ctx, sp.ID); act {
					case engine.ActSkip:
						ginkgo.Skip(msg)
					case engine.ActFail:
						ginkgo.Fail(msg + "\n" + s.Reproduce(""))
					case engine.ActLog:
						ginkgo.GinkgoWriter.Println(msg)
					}
				})
			}
			ginkgo.AfterAll(func() {
				if s == nil {
					return
				}
				v := s.Finish(func(line string) { ginkgo.GinkgoWriter.Println(line) })
				if why := s.NothingGraded(v); why != "" {
					ginkgo.Fail(why)
				}
			})
		})
	}
	return true
}
