package reference

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/rlconform/rlconform/contract"
)

// AllowRequests decides one request of each of userIDs, with the same
// semantics as calling AllowRequest for each in order, in one round trip:
// the decisions go to Redis as one pipeline of EVALSHA, which go-redis
// splits by node on a cluster (one round trip per node, in parallel). Two
// requests of one user are decided in their order in userIDs.
//
// allowed[i] is the answer for userIDs[i]. Like AllowRequest, it fails
// closed: an id that could not be decided is denied, and err joins one
// error per such id, wrapping [contract.ErrInvalidUserID] or
// [contract.ErrStore] as AllowRequest's would; when the exchange fails as
// a whole (the context or the limiter's Timeout ends first, the script
// cannot be loaded), err is one error for all. When a server does not
// have the script (NOSCRIPT, after a restart or SCRIPT FLUSH), the script
// is loaded once on every server and the requests it refused are sent
// again.
//
// Typical usage, for a gateway that gathers the requests of a few
// milliseconds:
//
//	allowed, err := lim.AllowRequests(ctx, []string{"alice", "bob", "alice"})
func (l *Limiter) AllowRequests(ctx context.Context, userIDs []string) ([]bool, error) {
	allowed := make([]bool, len(userIDs))
	var errs []error
	cfg := l.cfg.Load()
	now := l.now()
	calls := make([][]any, len(userIDs))
	for i, id := range userIDs {
		if err := contract.ValidateUserID(id); err != nil {
			errs = append(errs, fmt.Errorf("reference: AllowRequests: userIDs[%d]: %w", i, err))
			continue
		}
		calls[i] = l.scriptArgs(cfg, id, now, true, false)
	}
	cmds, err := boundedCall(l, ctx, evalPipelined, pipelined{calls, l.log})
	if err != nil {
		errs = append(errs, fmt.Errorf("reference: AllowRequests(%d ids): %w: %w", len(userIDs), contract.ErrStore, err))
		return allowed, errors.Join(errs...)
	}
	for i, cmd := range cmds {
		if cmd == nil {
			continue
		}
		vals, err := cmd.Slice()
		if err != nil {
			errs = append(errs, fmt.Errorf("reference: AllowRequests: userIDs[%d] %q: %w: %w", i, userIDs[i], contract.ErrStore, err))
			continue
		}
		res, ok := scriptAnswer(vals)
		if !ok {
			errs = append(errs, fmt.Errorf("reference: AllowRequests: userIDs[%d] %q: %w: script answered %v", i, userIDs[i], contract.ErrStore, vals))
			continue
		}
		allowed[i] = res[0] == 1
	}
	return allowed, errors.Join(errs...)
}

// pipelined is the EVALSHA commands of one AllowRequests, and the script
// they run.
type pipelined struct {
	calls [][]any
	log   *logScript
}

// evalPipelined sends calls (EVALSHA commands; nil ones are skipped) in one
// pipeline and returns their commands, done. Those refused with NOSCRIPT
// are sent again in a second pipeline once the script is loaded on every
// server of client. (Only a SCRIPT FLUSH landing inside the first pipeline
// could refuse a user's request and run a later one of theirs, which the
// second pipeline would then follow: both were asked at once.)
func evalPipelined(ctx context.Context, client redis.UniversalClient, p pipelined) ([]*redis.Cmd, error) {
	calls := p.calls
	cmds := make([]*redis.Cmd, len(calls))
	send := func(which []int) error {
		pipe := client.Pipeline()
		for _, i := range which {
			cmds[i] = redis.NewCmd(ctx, calls[i]...)
			cmds[i].SetFirstKeyPos(3)
			_ = pipe.Process(ctx, cmds[i])
		}
		_, err := pipe.Exec(ctx)
		return err
	}
	var all []int
	for i, args := range calls {
		if args != nil {
			all = append(all, i)
		}
	}
	if len(all) == 0 {
		return cmds, nil
	}
	if err := send(all); err != nil && ctx.Err() != nil {
		return nil, err
	}
	var refused []int
	for _, i := range all {
		if isNoScript(cmds[i].Err()) {
			refused = append(refused, i)
		}
	}
	if len(refused) == 0 {
		return cmds, nil
	}
	if err := loadScript(ctx, client, p.log.script); err != nil {
		return nil, fmt.Errorf("loading the script after NOSCRIPT: %w", err)
	}
	if err := send(refused); err != nil && ctx.Err() != nil {
		return nil, err
	}
	return cmds, nil
}

// loadSliding loads the sliding script on every server of client.
func loadSliding(ctx context.Context, client redis.UniversalClient) error {
	return loadScript(ctx, client, sliding)
}

// loadScript loads script on every server of client: a cluster client
// loads it on each master, a ring is asked shard by shard.
func loadScript(ctx context.Context, client redis.UniversalClient, script *redis.Script) error {
	if ring, ok := client.(*redis.Ring); ok {
		return ring.ForEachShard(ctx, func(ctx context.Context, shard *redis.Client) error {
			return script.Load(ctx, shard).Err()
		})
	}
	return script.Load(ctx, client).Err()
}
