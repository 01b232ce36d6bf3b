package engine

import (
	"context"
	"reflect"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/contract"
	"github.com/rlconform/rlconform/fakeclock"
)

// Target, HTTPAnswer and Env are suite's, field for field (the facade
// converts): see there for what each field means.
type Target struct {
	Name         string
	Addresses    []string
	Capabilities contract.Capabilities
	NeedsRedis   bool
	New          func(ctx context.Context, env Env) (lim contract.RateLimiterContract, close func() error, err error)
	KeyOf        func(prefix, userID string) string
	Alive        func(ctx context.Context) error
	Request      func(ctx context.Context, instance int, user string) (HTTPAnswer, error)
	MaxRPS       int
	SharedLimit  bool
}

type HTTPAnswer struct {
	Allowed        bool
	Sent, Returned time.Time
	RetryAfter     *time.Duration
	Remaining      *int
	Reset          *time.Duration
	Form           string
	ResetAt        *time.Time
	PolicyLimit    *int
	PolicyWindow   *time.Duration
	Malformed      []string
}

type Env struct {
	Redis       redis.UniversalClient
	RedisURL    string
	Clock       fakeclock.Clock
	KeyPrefix   string
	Instance    int
	MaxRequests int
	Window      time.Duration
}

// ZeroFields lists the fields of the struct v that hold their zero value:
// the facades' tests convert a target with every field set and expect
// none (a field added to Target and not to a conversion shows there).
func ZeroFields(v any) []string {
	rv := reflect.ValueOf(v)
	var out []string
	for i := range rv.NumField() {
		if rv.Field(i).IsZero() {
			out = append(out, rv.Type().Field(i).Name)
		}
	}
	return out
}
