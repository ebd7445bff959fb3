package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/mcp"
	"github.com/relayrt/relay/mcp/client"
)

// scripted is an HTTP server that answers each JSON-RPC request with answer(method, n),
// n counting the requests of that method from 1; it records the methods in order.
type scripted struct {
	mu      sync.Mutex
	methods []string
	counts  map[string]int
}

func (s *scripted) start(t *testing.T, answer func(w http.ResponseWriter, id json.RawMessage, method string, n int)) string {
	s.counts = map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			w.WriteHeader(http.StatusMethodNotAllowed) // no event stream of the session's own
			return
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.NewDecoder(r.Body).Decode(&m)
		s.mu.Lock()
		s.methods = append(s.methods, m.Method)
		s.counts[m.Method]++
		n := s.counts[m.Method]
		s.mu.Unlock()
		if m.ID == nil {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		answer(w, m.ID, m.Method, n)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// seen returns the methods received so far.
func (s *scripted) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.methods...)
}

func reply(w http.ResponseWriter, status int, v map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	v["jsonrpc"] = "2.0"
	json.NewEncoder(w).Encode(v)
}

// A legacy server that answers any method with an empty result has given no
// DiscoverResult: the client takes it for the initialize generation.
func TestA15_EmptyResultToDiscoverMeansLegacy(t *testing.T) {
	var s scripted
	url := s.start(t, func(w http.ResponseWriter, id json.RawMessage, method string, n int) {
		result := map[string]any{}
		if method == "initialize" {
			result = map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
				"serverInfo": map[string]any{"name": "s", "version": "1"}}
		}
		reply(w, 200, map[string]any{"id": id, "result": result})
	})
	c, err := client.Connect(context.Background(), client.HTTP(url))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Modern() || c.Version() != mcp.Version20251125 {
		t.Fatalf("modern %v version %q", c.Modern(), c.Version())
	}
	want := []string{"server/discover", "initialize", "notifications/initialized"}
	if got := s.seen(); !slices.Equal(got, want) {
		t.Fatalf("methods %v, want %v", got, want)
	}
}

// MCP 2026-07-28, Versioning: -32022 is a modern error; when its data names 2026-07-28 the
// client retries, and never falls back to initialize.
func TestA15_UnsupportedVersionErrorIsRetriedNotFallenBackFrom(t *testing.T) {
	var s scripted
	url := s.start(t, func(w http.ResponseWriter, id json.RawMessage, method string, n int) {
		if method == "server/discover" && n == 1 {
			reply(w, 400, map[string]any{"id": id, "error": map[string]any{"code": -32022, "message": "Unsupported protocol version",
				"data": map[string]any{"supported": []string{"2026-07-28"}, "requested": "x"}}})
			return
		}
		if method == "server/discover" {
			reply(w, 200, map[string]any{"id": id, "result": map[string]any{"resultType": "complete",
				"supportedVersions": []string{"2026-07-28"}, "capabilities": map[string]any{},
				"serverInfo": map[string]any{"name": "modern", "version": "1"}, "ttlMs": 0, "cacheScope": "private"}})
			return
		}
		reply(w, 404, map[string]any{"id": id, "error": map[string]any{"code": -32601, "message": "Method not found"}})
	})
	c, err := client.Connect(context.Background(), client.HTTP(url))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if !c.Modern() || c.ServerInfo().Name != "modern" {
		t.Fatalf("modern %v info %+v", c.Modern(), c.ServerInfo())
	}
	if got := s.seen(); !slices.Equal(got, []string{"server/discover", "server/discover"}) {
		t.Fatalf("methods %v, want two server/discover", got)
	}
}

// A -32022 whose data does not name a version this client speaks ends Connect: the
// server is modern, so initialize would be wrong.
func TestA15_UnsupportedVersionWithoutOursFailsWithoutInitialize(t *testing.T) {
	var s scripted
	url := s.start(t, func(w http.ResponseWriter, id json.RawMessage, method string, n int) {
		reply(w, 400, map[string]any{"id": id, "error": map[string]any{"code": -32022, "message": "Unsupported protocol version",
			"data": map[string]any{"supported": []string{"2099-01-01"}, "requested": "2026-07-28"}}})
	})
	if c, err := client.Connect(context.Background(), client.HTTP(url)); err == nil {
		c.Close()
		t.Fatal("Connect succeeded")
	}
	if got := s.seen(); slices.Contains(got, "initialize") {
		t.Fatalf("fell back to initialize: %v", got)
	}
}

// A pinned 2026-07-28 has nothing to detect: a server slower than the discover timeout is
// waited for (only Connect's context bounds it), not given up on.
func TestPinnedVersionWaitsPastTheDiscoverTimeout(t *testing.T) {
	var s scripted
	url := s.start(t, func(w http.ResponseWriter, id json.RawMessage, method string, n int) {
		time.Sleep(200 * time.Millisecond) // four discover timeouts
		reply(w, 200, map[string]any{"id": id, "result": map[string]any{"resultType": "complete",
			"supportedVersions": []string{"2026-07-28"}, "capabilities": map[string]any{},
			"serverInfo": map[string]any{"name": "slow", "version": "1"}, "ttlMs": 0, "cacheScope": "private"}})
	})
	c, err := client.Connect(context.Background(), client.HTTP(url),
		client.WithVersion(mcp.Version20260728), client.WithDiscoverTimeout(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

// A server that knows server/discover but offers only versions of the initialize
// generation (-32022 listing them) is retried, as Versioning says, with one of those:
// the newest this client speaks, through initialize.
func TestUnsupportedVersionListingOnlyLegacyVersionsMeansInitialize(t *testing.T) {
	var s scripted
	url := s.start(t, func(w http.ResponseWriter, id json.RawMessage, method string, n int) {
		switch method {
		case "server/discover":
			reply(w, 400, map[string]any{"id": id, "error": map[string]any{"code": -32022, "message": "Unsupported protocol version",
				"data": map[string]any{"supported": []string{"2025-06-18", "2025-03-26"}, "requested": "2026-07-28"}}})
		case "initialize":
			reply(w, 200, map[string]any{"id": id, "result": map[string]any{"protocolVersion": "2025-06-18",
				"capabilities": map[string]any{}, "serverInfo": map[string]any{"name": "s", "version": "1"}}})
		}
	})
	c, err := client.Connect(context.Background(), client.HTTP(url))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Modern() || c.Version() != mcp.Version20250618 {
		t.Fatalf("modern %v version %q, want 2025-06-18", c.Modern(), c.Version())
	}
}
