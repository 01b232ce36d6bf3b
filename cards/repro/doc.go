// Package repro confirms the report cards' deviations apart from
// rlconform: each test calls a library as its own users do, on a real
// Redis where it keeps its state there, and checks the one fact a card
// reports (docs/cards.md), from the library's own answers, keys and
// arithmetic. None waits for time to pass: where a deviation needs time,
// the test shows the state that makes it (a TTL shorter than the state's
// life, an epoch second rounded down), or moves the library's clock by
// hand (@nestjs/throttler's Date.now). Fiber's limiters alone read a
// cached clock no test can move: their tests poll it (it ticks once a
// second) and send at the instants of it the finding needs, about 2 s
// each.
package repro
