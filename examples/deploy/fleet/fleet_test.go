//go:build unix

package fleet

// Unix only: nginx, redis-server and the instances are stopped and killed with signals
// (SIGTERM, SIGQUIT, SIGKILL), and the tests kill one instance as a crash would.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/relayrt/relay/internal/redistest"
)

// binDir holds the binaries built for this test binary, once each.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "relay-fleet-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// builds holds, by package, the binary built for this test binary, once each.
var builds sync.Map // package path → func() (string, error)

// built builds the package at pkg (relative to this directory) once for the whole test
// binary and returns the binary's path.
func built(t *testing.T, pkg string) string {
	t.Helper()
	build, _ := builds.LoadOrStore(pkg, sync.OnceValues(func() (string, error) {
		bin := filepath.Join(binDir, filepath.Base(pkg))
		if out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			return "", fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
		}
		return bin, nil
	}))
	bin, err := build.(func() (string, error))()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// everythingBin is examples/everything, built once.
func everythingBin(t *testing.T) string { return built(t, "../../everything") }

// relayBin is cmd/relay, built once.
func relayBin(t *testing.T) string { return built(t, "../../../cmd/relay") }

// program is what a fleet's instances run: the command line of the instance named name,
// serving on addr, with the fleet's flags (--redis, --state-key-file).
type program func(t *testing.T, name, addr string, fleet ...string) []string

// everything is examples/everything -http, with args.
func everything(args ...string) program {
	return func(t *testing.T, name, addr string, fleet ...string) []string {
		return append(append([]string{everythingBin(t), "-http", addr, "-instance", name}, fleet...), args...)
	}
}

// stateKey is the key every instance of a test's fleet signs its requestState with.
const stateKey = "4f1c2a9be07d53a8c6f0e9b7d2a41c85f3e6b90a7d18c24e5b3f6a0c9d8e7b12"

// instance is one process of a fleet.
type instance struct {
	name, addr string
	cmd        *exec.Cmd
	drained    chan struct{}
	mu         sync.Mutex
	killed     bool
}

// kill ends the instance with SIGKILL, as a crash or a lost host would, and reaps it.
func (in *instance) kill() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.killed {
		return
	}
	in.killed = true
	in.cmd.Process.Kill()
	<-in.drained
	in.cmd.Wait()
}

// fleet is nginx, round-robin without affinity, in front of three instances (a, b, c; of
// examples/everything unless the test chose another program) that share a real
// redis-server and one state key, all on 127.0.0.1.
type fleet struct {
	url       string            // nginx's /mcp
	dir       string            // nginx's prefix: access.log is there
	redis     *redistest.Server // nil when the test runs its own
	instances map[string]*instance
}

// startFleet starts a Redis (redistest: nothing persisted), three instances of
// examples/everything and nginx, all stopped when the test ends. args are added to each
// instance's command line.
func startFleet(t *testing.T, args ...string) *fleet { return startFleetOf(t, everything(args...)) }

// startFleetOf is startFleet with instances that run p.
func startFleetOf(t *testing.T, p program) *fleet {
	t.Helper()
	r := redistest.Start(t)
	f := startFleetOn(t, r.URL, p)
	f.redis = r
	return f
}

// startFleetOn is startFleetOf on the Redis at redisURL, which the test runs.
func startFleetOn(t *testing.T, redisURL string, p program) *fleet {
	t.Helper()
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		if _, err = os.Stat("/usr/sbin/nginx"); err != nil {
			t.Skip("nginx is not installed (Debian package nginx)")
		}
		nginx = "/usr/sbin/nginx"
	}
	f := &fleet{instances: map[string]*instance{}}
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "state-key")
	if err := os.WriteFile(keyFile, []byte(stateKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ports := map[string]string{}
	for _, name := range []string{"a", "b", "c"} {
		addr := "127.0.0.1:" + freePort(t)
		in := startInstance(t, name, addr, p(t, name, addr, "--redis", redisURL+"/?prefix=fleet-test:", "--state-key-file", keyFile)...)
		f.instances[name] = in
		_, ports[name], _ = net.SplitHostPort(in.addr)
	}
	lb := freePort(t)
	conf, err := os.ReadFile("nginx.conf")
	if err != nil {
		t.Fatal(err)
	}
	r := strings.NewReplacer("@PREFIX@", dir, "@PORT_A@", ports["a"], "@PORT_B@", ports["b"],
		"@PORT_C@", ports["c"], "@PORT_LB@", lb)
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, []byte(r.Replace(string(conf))), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nginx, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log"))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGQUIT) // graceful
		cmd.Wait()
		if t.Failed() {
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			t.Logf("nginx stderr:\n%s\nerror.log:\n%s", stderr.String(), log)
		}
	})
	waitListening(t, "127.0.0.1:"+lb)
	f.url = "http://127.0.0.1:" + lb + "/mcp"
	f.dir = dir
	return f
}

// startInstance runs the command line cmdline as the instance name serving on addr, until
// the test ends (then SIGTERM, and a clean exit is expected unless the test killed it), and
// returns once its /readyz answers 200.
func startInstance(t *testing.T, name, addr string, cmdline ...string) *instance {
	t.Helper()
	cmd := exec.Command(cmdline[0], cmdline[1:]...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	in := &instance{name: name, addr: addr, cmd: cmd, drained: make(chan struct{})}
	go func() { // keep draining the instance's log so that it never blocks
		defer close(in.drained)
		for s := bufio.NewScanner(stderr); s.Scan(); {
			if testing.Verbose() && os.Getenv("RELAY_FLEET_LOG") != "" {
				fmt.Fprintf(os.Stderr, "[%s] %s\n", name, s.Text())
			}
		}
	}()
	t.Cleanup(func() {
		in.mu.Lock()
		defer in.mu.Unlock()
		if in.killed {
			return
		}
		cmd.Process.Signal(syscall.SIGTERM)
		<-in.drained
		if err := cmd.Wait(); err != nil {
			t.Errorf("instance %s did not shut down cleanly on SIGTERM: %v", name, err)
		}
	})
	deadline := time.Now().Add(time.Minute)
	for {
		res, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == http.StatusOK {
				return in
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("instance %s on %s never became ready: %v", name, addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}

func waitListening(t *testing.T, addr string) {
	for range 200 {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("nothing listens on %s", addr)
}

// ctxFor is a context that ends with the test, or after d.
func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// spread reads nginx's access log and returns, for each session that sent requests through
// it, how many of its requests each instance (by address) served.
func (f *fleet) spread(t *testing.T) map[string]map[string]int {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(f.dir, "access.log"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]int{}
	for line := range strings.Lines(string(log)) {
		fields := strings.Fields(line)
		if len(fields) != 4 {
			continue
		}
		sid := strings.TrimPrefix(fields[3], "session=")
		if sid == "" || sid == "-" {
			continue
		}
		if out[sid] == nil {
			out[sid] = map[string]int{}
		}
		out[sid][fields[0]]++
	}
	return out
}

// requireRedis skips t when redis-server is not installed, or fails it under
// RELAY_REQUIRE_REDIS=1 (as CI sets it), for the tests that run redis-server themselves.
func requireRedis(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv(redistest.RequireEnv) == "1" {
			t.Fatalf("redis-server is not installed and %s=1: install it (Debian package redis-server)", redistest.RequireEnv)
		}
		t.Skip("redis-server is not installed (Debian package redis-server)")
	}
}
