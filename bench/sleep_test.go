package bench

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/relayrt/relay/bench/load"
)

// Concurrency of slow handlers: sleepCalls tools/call of the sleep tool, each sleeping
// sleepFor, kept sleepInFlight at a time. A server that runs them all concurrently takes
// sleepCalls/sleepInFlight × sleepFor: the ideal, 100 ms.
const (
	sleepCalls    = 2560
	sleepInFlight = 256
	sleepFor      = 10 * time.Millisecond
	sleepIdeal    = sleepCalls / sleepInFlight * sleepFor
)

// BenchmarkSleep measures how concurrently each server runs handlers that wait: one
// iteration is 2,560 calls of sleep 10 ms at 256 in flight, so ns/op is the time the batch
// took; x-ideal divides it by the ideal 100 ms. The limit server has no sleep tool: its
// column is the ideal itself.
func BenchmarkSleep(b *testing.B) {
	for _, srv := range echoServers(b) {
		if srv.name == "limit" {
			continue
		}
		b.Run("server="+srv.name+"/calls=2560/inflight=256", func(b *testing.B) {
			switch {
			case srv.fail != "":
				b.Fatal(srv.fail)
			case srv.skip != "":
				b.Skip(srv.skip)
			}
			benchSleep(b, srv.cmd)
		})
	}
}

func benchSleep(b *testing.B, cmd []string) {
	ctx, cancel := context.WithTimeout(b.Context(), 10*time.Minute)
	defer cancel()
	args, _ := json.Marshal(map[string]int{"ms": int(sleepFor / time.Millisecond)})
	s, err := load.Start(ctx, load.Config{Command: cmd, Tool: "sleep", Args: args, InFlight: sleepInFlight})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Stop()
	// One untimed batch: every server starts its workers, threads or promises once.
	if _, err := s.Drive(ctx, sleepCalls, 0); err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	var p99 time.Duration
	b.ResetTimer()
	for range b.N {
		res, err := s.Drive(ctx, sleepCalls, 0)
		if err != nil {
			b.Fatal(err)
		}
		if res.Errors > 0 || res.Requests != sleepCalls {
			b.Fatalf("%d answers, %d of them errors; want %d results", res.Requests, res.Errors, sleepCalls)
		}
		total += res.Elapsed
		p99 = max(p99, res.Percentile(99))
	}
	b.StopTimer()
	if err := s.Stop(); err != nil {
		b.Error(err)
	}
	b.ReportMetric(float64(total)/float64(b.N)/float64(sleepIdeal), "x-ideal")
	b.ReportMetric(float64(p99)/float64(time.Millisecond), "p99-ms")
}
