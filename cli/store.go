package cli

import (
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/suite"
	"github.com/rlconform/rlconform/targets"
)

// storeFlags say how run grades a target while its store fails
// (robust/store-outage): how long a call may take, what an endpoint's
// policy is, and the command that faults a store the run does not own.
type storeFlags struct {
	storeTimeout time.Duration
	storeFault   string
	storeFailure string
}

func (f *storeFlags) register(fs *flag.FlagSet) {
	fs.DurationVar(&f.storeTimeout, "store-timeout", time.Second, "how long a call may take while the target's store is stopped or frozen (robust/store-outage), plus the round trip and a grace of half of it (at least 500ms); 10ms to 10s, less than --timeout, which must leave room for both")
	fs.StringVar(&f.storeFault, "store-fault", "", "with --target or --endpoint: `CMD` (sh -c) that faults the store the target uses, run as 'CMD stop', 'CMD freeze' and 'CMD resume', each returning once done (resume: once the store answers), so that robust/store-outage is graded; examples/store-fault has two (a redis-server by its pid file, a Docker container)")
	fs.StringVar(&f.storeFailure, "store-failure", "", "with --endpoint: what the service answers while its store fails, `POLICY` error (5xx: the default), allow (2xx) or deny (its refusal status); a protocol target declares it in its capabilities (\"store_failure\")")
}

// check reports store flags that do not go together with the target
// flags: targets and endpoints are how many of each, exec the --exec
// command, timeout the --timeout of each call; set, whether
// --store-timeout was given (the default may exceed a short --timeout:
// a call that --timeout cuts first is then undecided, never failed).
func (f *storeFlags) check(set bool, targets, endpoints int, exec string, timeout time.Duration) error {
	switch {
	case f.storeTimeout < 10*time.Millisecond || f.storeTimeout > 10*time.Second:
		return fmt.Errorf("--store-timeout %v: want 10ms to 10s", f.storeTimeout)
	case set && f.storeTimeout >= timeout:
		return fmt.Errorf("--store-timeout %v: want less than --timeout %v, which bounds every call, outages included", f.storeTimeout, timeout)
	case f.storeFault != "" && exec != "":
		return errors.New("--store-fault goes with --target or --endpoint: with --exec the run starts the service on a Redis of its own, and faults that itself")
	case f.storeFault != "" && targets == 0 && endpoints == 0:
		return errors.New("--store-fault goes with --target or --endpoint: the reference runs on a Redis the run faults itself")
	case f.storeFailure != "" && endpoints == 0:
		return errors.New("--store-failure goes with --endpoint: a protocol target declares its policy in its capabilities (\"store_failure\")")
	}
	if _, err := contract.ParseStoreFailure(f.storeFailure); err != nil {
		return fmt.Errorf("--store-failure: %w", err)
	}
	return nil
}

// apply sets what the flags say on cfg and t: the store timeout, the
// endpoint's policy, and the command that faults its store.
func (f *storeFlags) apply(cfg *suite.Config, t *suite.Target) {
	cfg.StoreTimeout = f.storeTimeout
	if f.storeFailure != "" {
		t.Capabilities.StoreFailure, _ = contract.ParseStoreFailure(f.storeFailure)
	}
	if f.storeFault != "" {
		t.StoreFault = targets.StoreFaultCommand(f.storeFault)
	}
}
