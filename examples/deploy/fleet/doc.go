// Package fleet holds a fleet of Relay instances behind a balancer with no affinity:
// nginx.conf sends every request round-robin to three instances of examples/everything that
// share one Redis (sessions, SSE events, tasks, changes) and one state key, and
// ../fleet.sh starts them all on loopback for a user to try. The tests run the official
// conformance suite through that balancer, drive one session across all three instances,
// and kill an instance and Redis under load.
package fleet
