package ginkgouser_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/rlconform/rlconform/suite"
	rlcginkgo "github.com/rlconform/rlconform/suite/ginkgo"
	"github.com/rlconform/rlconform/targets"
)

var _ = rlcginkgo.Register(suite.Config{}, targets.Model())

func TestUser(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "a Ginkgo user")
}
