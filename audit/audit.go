// Package audit judges a rate limiter by the access logs of the gateways
// in front of it (rlconform audit): each log's requests are read
// ([accesslog]), merged in the order they ended, and judged, streaming,
// by the interval judge of rlconform bench ([bench.Stream]): an overshoot
// or an unexplained refusal is what no admissible timing of the requests
// explains, and a log whose intervals are too wide to tell is undecided,
// never passed.
//
// Typical usage:
//
//	res, err := audit.Run(ctx, audit.Config{Format: "nginx", Log: accesslog.Options{LogFormat: f, User: "$http_x_user"},
//		Judge: bench.Judge{Limit: 100, Window: time.Minute}}, audit.Files("gw1.log", "gw2.log.gz"))
//	res.Text(os.Stdout)
//	os.Exit(res.Verdict.Code)
package audit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rlconform/rlconform/audit/accesslog"
	"github.com/rlconform/rlconform/bench"
	"github.com/rlconform/rlconform/internal/loglines"
)

// Config says what to read and how to judge it.
type Config struct {
	// Format is the logs' format (accesslog.Formats), Log how to read
	// them.
	Format string
	Log    accesslog.Options
	// Judge is the limit the limiter enforces and the profile it claims
	// (its Start is ignored).
	Judge bench.Judge
	// ClockSkew bounds how far the gateways' clocks may be from the
	// limiter's; Settle how far out of order a log's lines may be, and
	// how long a request may last (see [bench.StreamOptions]).
	ClockSkew time.Duration
	Settle    time.Duration
}

// Source is one log: a gateway instance's.
type Source struct {
	// Name names it in the report (a path, or "-" for stdin).
	Name string
	// Open opens it (gzipped or not), once to read it and, for the
	// evidence's lines, once more when Reopen is set.
	Open   func() (io.ReadCloser, error)
	Reopen bool
}

// Files are the logs at paths; "-" is standard input (read once: the
// evidence of a finding in it names its lines without their text).
func Files(paths ...string) []Source {
	var out []Source
	for _, p := range paths {
		if p == "-" {
			out = append(out, Source{Name: "-", Open: func() (io.ReadCloser, error) { return io.NopCloser(os.Stdin), nil }})
			continue
		}
		out = append(out, Source{Name: p, Reopen: true, Open: func() (io.ReadCloser, error) { return os.Open(p) }})
	}
	return out
}

// maxSources bounds the logs of one audit (a ref holds the source in its
// top 16 bits).
const maxSources = 1 << 15

// Run reads the sources and judges what they hold. It returns an error
// only when it cannot judge: a bad configuration, a log it cannot open or
// read (a gzip stream cut short is read up to the cut, and said), a
// parser's fatal error, or ctx ended (then with the result of what was
// read, Interrupted set).
func Run(ctx context.Context, cfg Config, sources []Source) (*Result, error) {
	switch {
	case len(sources) == 0:
		return nil, errors.New("audit: no log to read")
	case len(sources) > maxSources:
		return nil, fmt.Errorf("audit: %d logs: at most %d", len(sources), maxSources)
	}
	stream, err := bench.NewStream(cfg.Judge, bench.StreamOptions{ClockSkew: cfg.ClockSkew, Settle: cfg.Settle})
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	rules, err := cfg.Judge.Rules()
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	began := time.Now()
	m, err := openAll(cfg, sources)
	if err != nil {
		return nil, err
	}
	defer m.close()
	res := &Result{Format: cfg.Format, Limit: cfg.Judge.Limit, Window: cfg.Judge.Window, Rules: rules}
	interrupted, err := m.feed(ctx, stream, res)
	if err != nil {
		return nil, err
	}
	res.Stream = stream.Finish()
	res.Profile = res.Stream.Exactness.Profile
	res.Interrupted = interrupted
	m.report(res)
	res.Took = time.Since(began)
	res.evidence(sources)
	res.Verdict = res.judge()
	if interrupted {
		return res, ctx.Err()
	}
	return res, nil
}

// openAll opens every source with a parser of the format.
func openAll(cfg Config, sources []Source) (*merger, error) {
	m := &merger{}
	for i, s := range sources {
		in, err := s.Open()
		if err != nil {
			m.close()
			return nil, fmt.Errorf("audit: %w", err)
		}
		lr, err := loglines.New(in)
		if err != nil {
			in.Close()
			m.close()
			return nil, fmt.Errorf("audit: %s: %w", s.Name, err)
		}
		p, err := accesslog.New(cfg.Format, cfg.Log)
		if err != nil {
			in.Close()
			m.close()
			return nil, fmt.Errorf("audit: %w", err)
		}
		m.logs = append(m.logs, &log{index: i, name: s.Name, in: in, lines: lr, parser: p, stats: FileStats{Name: s.Name, Skipped: map[string]*SkipCount{}}})
	}
	return m, nil
}
