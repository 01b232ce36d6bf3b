package engine

import (
	"errors"
	"flag"
	"fmt"
	mrand "math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/grade"
	"github.com/rlconform/rlconform/internal/commalist"
	"github.com/rlconform/rlconform/model"
	"github.com/rlconform/rlconform/result"
)

// Config, Target, Env and HTTPAnswer are package grade's, under the
// engine's short names: one definition, there.
type (
	Config     = grade.Config
	Target     = grade.Target
	Env        = grade.Env
	HTTPAnswer = grade.HTTPAnswer
	SpecInfo   = grade.SpecInfo
)

// withDefaults is c with every zero field at its default.
func withDefaults(c Config) Config {
	if c.Level == "" {
		c.Level = result.All
	}
	if c.Seed == 0 {
		c.Seed = mrand.Uint64()
	}
	if c.Limit == 0 {
		c.Limit = 5
	}
	if c.Window == 0 {
		c.Window = time.Minute
	}
	if c.RealTimeWindow == 0 {
		c.RealTimeWindow = time.Second
	}
	if c.SpecTimeout == 0 {
		c.SpecTimeout = time.Minute
	}
	if c.StoreTimeout == 0 {
		c.StoreTimeout = DefaultStoreTimeout
	}
	return c
}

// The store timeout (Config.StoreTimeout): its default, and the range it
// is taken in. Below 10ms a store client on a loaded machine cannot tell
// a slow answer from none; above 10s the calls of an outage, each given
// the timeout and its grace, crowd the spec's own minute.
const (
	DefaultStoreTimeout = time.Second
	MinStoreTimeout     = 10 * time.Millisecond
	MaxStoreTimeout     = 10 * time.Second
)

// algorithmsOf is the set of algorithms cfg's profile is parsed against.
func algorithmsOf(cfg Config) *model.Algorithms {
	if cfg.Algorithms != nil {
		return cfg.Algorithms
	}
	return model.Builtin()
}

// Validate reports every problem of c: an unknown level, id, label or
// expected failure (with the nearest valid name), a selection that matches no
// spec, a configuration out of range.
func (cat Catalogue) Validate(c Config) error {
	_, err := cat.validated(c)
	return err
}

// validated is c with its defaults, or the reasons c is invalid.
func (cat Catalogue) validated(c Config) (Config, error) {
	c = withDefaults(c)
	var errs []error
	if _, err := result.ParseLevel(string(c.Level)); err != nil {
		errs = append(errs, err)
	}
	if err := contract.ValidateConfig(c.Limit, c.Window); err != nil {
		errs = append(errs, fmt.Errorf("Config.Limit %d, Config.Window %v: %w", c.Limit, c.Window, err))
	}
	if c.Limit > 10_000 {
		errs = append(errs, fmt.Errorf("Config.Limit %d: specs send several times the limit, keep it at most 10000", c.Limit))
	}
	if _, err := c.Variant(); err != nil {
		errs = append(errs, fmt.Errorf("Config.Profile: %w", err))
	}
	if c.RealTimeWindow < 10*time.Millisecond || c.RealTimeWindow > 24*time.Hour {
		errs = append(errs, fmt.Errorf("RealTimeWindow %v: want 10ms to 24h (specs wait windows out)", c.RealTimeWindow))
	}
	if c.Parallel < 0 || c.Parallel > MaxParallel {
		errs = append(errs, fmt.Errorf("Config.Parallel %d: want 0 (what the target can take) to %d", c.Parallel, MaxParallel))
	}
	if c.SpecTimeout < 0 {
		errs = append(errs, fmt.Errorf("SpecTimeout %v: want a positive bound", c.SpecTimeout))
	}
	if c.StoreTimeout < MinStoreTimeout || c.StoreTimeout > MaxStoreTimeout {
		errs = append(errs, fmt.Errorf("StoreTimeout %v: want %v to %v", c.StoreTimeout, MinStoreTimeout, MaxStoreTimeout))
	}
	var ids, labels []string
	for _, s := range cat {
		ids = append(ids, s.ID)
		for _, l := range s.labels() {
			if !slices.Contains(labels, l) {
				labels = append(labels, l)
			}
		}
	}
	for _, id := range slices.Concat(c.IDs, c.ExpectFail) {
		if now, ok := retired[id]; ok {
			errs = append(errs, fmt.Errorf("spec %s was retired: it is now %s", id, now))
		}
	}
	for _, id := range c.IDs {
		if strings.HasSuffix(id, "/") && slices.ContainsFunc(ids, func(s string) bool { return strings.HasPrefix(s, id) }) {
			continue
		}
		if _, ok := retired[id]; !ok && !slices.Contains(ids, id) {
			errs = append(errs, unknown("spec id", id, ids))
		}
	}
	for _, id := range c.ExpectFail {
		if _, ok := retired[id]; !ok && !slices.Contains(ids, id) {
			errs = append(errs, unknown("expected failure: spec id", id, ids))
		}
	}
	for _, l := range c.Labels {
		if !slices.Contains(labels, l) {
			errs = append(errs, unknown("label", l, labels))
		}
	}
	if len(errs) == 0 && len(selectSpecs(c, cat)) == 0 {
		errs = append(errs, fmt.Errorf("no spec matches level %s, ids %v and labels %v", c.Level, c.IDs, c.Labels))
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("invalid configuration: %w", errors.Join(errs...))
	}
	return c, nil
}

// unknown is the error for a name that is not one of valid, with the
// nearest valid one when it is close, or the valid ones it starts.
func unknown(what, name string, valid []string) error {
	var starts []string
	for _, v := range valid {
		if strings.HasPrefix(v, name) {
			starts = append(starts, v)
		}
	}
	if len(starts) > 0 && strings.Contains(what, "spec id") {
		hint := ""
		if i := strings.LastIndexByte(name, '/'); i >= 0 && strings.HasPrefix(what, "spec id") {
			hint = fmt.Sprintf("; a prefix ending in / selects a group, e.g. %q", name[:i+1])
		} else if strings.HasPrefix(what, "spec id") {
			hint = fmt.Sprintf("; a prefix ending in / selects a group, e.g. %q", name+"/")
		}
		if len(starts) > 4 {
			starts = append(starts[:4], "…")
		}
		return fmt.Errorf("unknown %s %q: ids starting with it are %s%s", what, name, strings.Join(starts, ", "), hint)
	}
	candidates := valid
	if strings.Contains(what, "spec id") {
		for _, l := range result.LevelOrder() {
			candidates = append(slices.Clip(candidates), string(l)+"/")
		}
	}
	best, dist := "", len(name)/2+2
	for _, v := range candidates {
		if d := editDistance(name, v); d < dist {
			best, dist = v, d
		}
	}
	for _, v := range valid { // a level left out: "reset" for "core/reset"
		if strings.HasSuffix(v, "/"+name) {
			best = v
		}
	}
	if best != "" {
		return fmt.Errorf("unknown %s %q (did you mean %q?)", what, name, best)
	}
	return fmt.Errorf("unknown %s %q (suite.Specs() and 'rlconform list' list them)", what, name)
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// reproduce is the line that reruns this configuration under go test, for
// the test function test ("" when unknown: a Ginkgo suite).
func reproduce(c Config, test string) string {
	var b strings.Builder
	b.WriteString("reproduce with: go test")
	if test != "" {
		fmt.Fprintf(&b, " -run '^%s$'", regexp.QuoteMeta(test))
	}
	fmt.Fprintf(&b, " -args -rlconform.seed=%d -rlconform.level=%s", c.Seed, c.Level)
	if c.Profile != "" {
		fmt.Fprintf(&b, " -rlconform.profile=%s", c.Profile)
	}
	if len(c.IDs) > 0 {
		fmt.Fprintf(&b, " -rlconform.id=%s", strings.Join(c.IDs, ","))
	}
	if len(c.ExpectFail) > 0 {
		fmt.Fprintf(&b, " -rlconform.expect-fail=%s", strings.Join(c.ExpectFail, ","))
	}
	return b.String()
}

// testFlags are the -rlconform.* flags of a go test binary that imports
// this package; set ones override the Config given to Run and Register.
type testFlags struct {
	seed                    uint64
	level                   string
	ids, labels, expectFail commalist.List
	reportDir               string
	profile                 string
}

// flags is the one piece of package state: flags must be registered when
// the package initialises, before the testing package parses them.
var flags testFlags

func init() {
	// A binary that defines these names itself keeps its own.
	if flag.Lookup("rlconform.seed") != nil {
		return
	}
	flag.Uint64Var(&flags.seed, "rlconform.seed", 0, "rlconform: seed of the randomised specs (0: pick one)")
	flag.StringVar(&flags.level, "rlconform.level", "", "rlconform: highest level to grade: core, strict, robust or all")
	flag.Var(&flags.ids, "rlconform.id", "rlconform: only these spec ids, or prefixes ending in / (comma-separated)")
	flag.Var(&flags.labels, "rlconform.label", "rlconform: only specs with any of these labels (comma-separated)")
	flag.Var(&flags.expectFail, "rlconform.expect-fail", "rlconform: spec ids the limiter knowingly fails (comma-separated)")
	flag.StringVar(&flags.reportDir, "rlconform.report-dir", "", "rlconform: directory for failure artefacts")
	flag.StringVar(&flags.profile, "rlconform.profile", "", "rlconform: the profile to grade against, NAME[:key=value,...] (default sliding-log)")
}

// flagOverrides applies the -rlconform.* flags that were set to cfg.
func flagOverrides(cfg Config) Config {
	if !flag.Parsed() {
		return cfg
	}
	if flags.seed != 0 {
		cfg.Seed = flags.seed
	}
	if flags.level != "" {
		cfg.Level = result.Level(flags.level)
	}
	if len(flags.ids) > 0 {
		cfg.IDs = flags.ids
	}
	if len(flags.labels) > 0 {
		cfg.Labels = flags.labels
	}
	if len(flags.expectFail) > 0 {
		cfg.ExpectFail = flags.expectFail
	}
	if flags.reportDir != "" {
		cfg.ReportDir = flags.reportDir
	}
	if flags.profile != "" {
		cfg.Profile = flags.profile
	}
	return cfg
}

// selection says which specs of the level the run grades when IDs or
// Labels narrow it ("" for all of them), e.g. "ids core/reset, strict/".
func selection(c Config) string {
	var parts []string
	if len(c.IDs) > 0 {
		parts = append(parts, "ids "+strings.Join(c.IDs, ", "))
	}
	if len(c.Labels) > 0 {
		parts = append(parts, "labels "+strings.Join(c.Labels, ", "))
	}
	return strings.Join(parts, "; ")
}

// selectionNote is the selection as the end of a sentence: "" for the
// whole level, else ", only " and the selection.
func selectionNote(c Config) string {
	if sel := selection(c); sel != "" {
		return ", only " + sel
	}
	return ""
}
