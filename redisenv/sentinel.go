package redisenv

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// DefaultSentinelPort is the port of a Sentinel address given without one.
const DefaultSentinelPort = "26379"

// IsSentinelURL reports whether url names a Redis behind Sentinel (see
// [ParseSentinelURL]).
func IsSentinelURL(url string) bool {
	if s, _, ok := strings.Cut(url, "://"); ok && (s == "redis+sentinel" || s == "redis-sentinel") {
		return true
	}
	return strings.Contains(url, "://") && strings.Contains(url, "master_name=")
}

// ParseSentinelURL reads the address of a Redis behind Sentinel, in
// either of two forms:
//
//	redis+sentinel://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...]/MASTER[/DB]
//	redis://[[USER]:PASSWORD@]HOST:PORT?master_name=MASTER[&addr=HOST:PORT...]
//
// The first (redis-sentinel:// too) names the Sentinels, each at port 26379 unless given, and the master's name; its
// credentials are the master's and the Sentinels' alike. The second is
// go-redis' own (redis.ParseFailoverURL; rediss:// for TLS): the host
// and each addr a Sentinel, the credentials the Sentinels', further
// options in the query. The client follows a failover: it asks the Sentinels for the
// master again whenever its connection fails.
func ParseSentinelURL(raw string) (*redis.FailoverOptions, error) {
	scheme, _, _ := strings.Cut(raw, "://")
	if scheme == "redis" || scheme == "rediss" {
		o, err := redis.ParseFailoverURL(raw)
		if err != nil {
			return nil, err
		}
		if o.MasterName == "" {
			return nil, fmt.Errorf("master_name is empty")
		}
		return o, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, err
	}
	o := &redis.FailoverOptions{}
	if u.Scheme != "redis+sentinel" && u.Scheme != "redis-sentinel" {
		return nil, fmt.Errorf("scheme %q: want redis+sentinel or redis-sentinel", u.Scheme)
	}
	for _, h := range strings.Split(u.Host, ",") {
		if h == "" {
			return nil, fmt.Errorf("an empty Sentinel address in %q", u.Host)
		}
		if _, _, err := net.SplitHostPort(h); err != nil {
			h = net.JoinHostPort(h, DefaultSentinelPort)
		}
		o.SentinelAddrs = append(o.SentinelAddrs, h)
	}
	path := strings.Split(strings.Trim(u.Path, "/"), "/")
	if path[0] == "" || len(path) > 2 {
		return nil, fmt.Errorf("path %q: want /MASTER or /MASTER/DB", u.Path)
	}
	o.MasterName = path[0]
	if len(path) == 2 {
		if o.DB, err = strconv.Atoi(path[1]); err != nil || o.DB < 0 {
			return nil, fmt.Errorf("database %q: want a number", path[1])
		}
	}
	if u.User != nil {
		o.Username = u.User.Username()
		o.Password, _ = u.User.Password()
		o.SentinelUsername, o.SentinelPassword = o.Username, o.Password
	}
	if u.RawQuery != "" {
		return nil, fmt.Errorf("query %q: this form takes none (go-redis' redis://...?master_name= form takes options)", u.RawQuery)
	}
	return o, nil
}
