// Package fleet keeps the state that a fleet of Relay instances shares, on Redis, so that any
// instance serves any request: the SSE events of sessions, for resumption on any instance
// (EventStore, an httpx.EventStore), initialize-generation sessions, for any instance to
// serve (SessionStore, an httpx.SessionStore), tasks (TaskStore, an mcp.TaskStore), and the
// messages the instances tell each other (Bus, an mcp.Bus).
//
// Open connects; every key and channel begins with Options.Prefix. While Redis is down,
// calls fail, within Options.Timeout, with an error wrapping ErrUnavailable, and succeed
// again once it is back: the client reconnects by itself. A Bus subscription does not
// survive the loss: its channel closes, and the subscriber subscribes again.
//
// The fleet needs one Redis (tested with 7.0), standalone or a primary behind a fixed
// address; Redis Cluster is not supported, since the task store's scripts touch keys
// they are not given. What is kept is disposable: a Redis that restarts empty loses the
// events (clients cannot resume, and open new streams), the sessions (their next request
// is told to initialize again) and the tasks (tasks/get answers that they are not found). Redis's maxmemory is the fleet's bound in bytes, with a policy
// of noeviction or volatile-*: the task store's bookkeeping keys have no expiry and must not
// be evicted.
//
// The task store's clock is each instance's own: the instances' clocks must agree to well
// within the tasks' TTLs, as NTP keeps them.
//
// The tests run against a real redis-server (internal/redistest); the stores pass the same
// suites as the memory ones (internal/storetest).
//
// What a call costs, with Redis 7.0 on loopback of a 2-core machine shared with other work
// (go test -run '^$' -bench . -benchmem ./fleet): the round trip dominates, one per call
// but Update's two.
//
//	BenchmarkEventStoreAppend-2    14887    77533 ns/op    2082 B/op     46 allocs/op
//	BenchmarkEventStoreAfter-2      3873   340899 ns/op   80371 B/op   1016 allocs/op (100 events)
//	BenchmarkTaskStoreUpdate-2      9594   124699 ns/op    4103 B/op     82 allocs/op
//	BenchmarkBusPublish-2          15123    73257 ns/op     583 B/op     18 allocs/op
package fleet
