package fleetflag

import (
	"context"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/relayrt/relay/fleet"
	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/internal/redistest"
	"github.com/relayrt/relay/mcp"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func parse(t *testing.T, args ...string) *Flag {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	f := AddFlag(fs, "with -http")
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestURL(t *testing.T) {
	t.Setenv(Env, "")
	if u, err := parse(t).URL(); u != "" || err != nil {
		t.Fatalf("neither: %q, %v", u, err)
	}
	if u, err := parse(t, "--redis", "redis://a:1").URL(); u != "redis://a:1" || err != nil {
		t.Fatalf("flag: %q, %v", u, err)
	}
	t.Setenv(Env, "redis://b:2")
	if u, err := parse(t).URL(); u != "redis://b:2" || err != nil {
		t.Fatalf("variable: %q, %v", u, err)
	}
	if _, err := parse(t, "--redis", "redis://a:1").URL(); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Fatalf("both: %v, want an error that says to give it one way", err)
	}
}

func TestJoinNothingIsNoFleet(t *testing.T) {
	t.Setenv(Env, "")
	m, err := parse(t).Join(context.Background())
	if m != nil || err != nil {
		t.Fatalf("%v, %v", m, err)
	}
	var so mcp.ServerOptions
	var ho httpx.MCPOptions
	m.Server(&so)
	m.Handler(&ho)
	if so.Bus != nil || so.TaskStore != nil || ho.SessionStore != nil || ho.EventStore != nil || ho.Bus != nil {
		t.Fatal("a nil member set options")
	}
	if m.Close() != nil {
		t.Fatal("closing a nil member")
	}
}

func TestJoinABadURLSaysSo(t *testing.T) {
	t.Setenv(Env, "")
	if _, err := parse(t, "--redis", "http://x").Join(context.Background()); err == nil || !strings.Contains(err.Error(), "redis://") {
		t.Fatalf("%v, want an error naming the form of the URL", err)
	}
}

// TestJoinWhileRedisIsDown: an instance starts while its Redis is down; what needs Redis
// fails with a retryable error, and succeeds once Redis is up.
func TestJoinWhileRedisIsDown(t *testing.T) {
	srv := redistest.Start(t)
	srv.Stop()
	t.Setenv(Env, srv.URL+"?prefix=t:")
	m, err := parse(t).Join(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	var ho httpx.MCPOptions
	m.Handler(&ho)
	ctx := context.Background()
	if _, err := ho.SessionStore.Get(ctx, "s", 0); !errors.Is(err, fleet.ErrUnavailable) {
		t.Fatalf("while Redis is down: %v, want ErrUnavailable", err)
	}
	srv.Restart()
	if ok, err := ho.SessionStore.Put(ctx, "s", 1, []byte("r"), 60e9); !ok || err != nil {
		t.Fatal(err)
	}
	if rec, err := ho.SessionStore.Get(ctx, "s", 60e9); string(rec) != "r" || err != nil {
		t.Fatalf("once Redis is up: %q, %v", rec, err)
	}
}

// Export hands the fleet's Redis to the children in $RELAY_REDIS_URL, or takes it out.
func TestExport(t *testing.T) {
	t.Setenv(Env, "redis://before:6379")
	if err := Export("redis://127.0.0.1:6379/?prefix=f:"); err != nil || os.Getenv(Env) != "redis://127.0.0.1:6379/?prefix=f:" {
		t.Errorf("after Export, $%s = %q (%v)", Env, os.Getenv(Env), err)
	}
	if err := Export(""); err != nil {
		t.Fatal(err)
	}
	if v, ok := os.LookupEnv(Env); ok {
		t.Errorf("after Export(\"\"), $%s = %q; want it unset", Env, v)
	}
}
