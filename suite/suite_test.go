package suite_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/rlconform/rlconform/suite"
)

// The catalogue graded on the reference limiter (real Redis, fake clock) and
// on the model: both must pass every spec.
var _ = suite.Register(suite.Config{}, suite.ReferenceTarget(), suite.ModelTarget())

func TestConformance(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "rlconform conformance")
}
