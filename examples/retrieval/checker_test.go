package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// The RCP reference checker (conformance/check.py of the RCP repository, kept unmodified
// beside the project in shared/third_party/rcp-conformance) run against the real binary, over
// stdio and over HTTP in both of its modes. RCP_CHECKER names check.py; without it the
// checker is looked for in a shared/third_party directory beside the project. .ci/run sets
// RCP_CHECKER, so that in CI a missing checker fails instead of skipping.

// checkerReport is what check.py --json prints after its human-readable lines.
type checkerReport struct {
	CertifiedLevel    *string
	DeclaredLevel     string
	DeclarationHonest bool
	Passed            int
	Failed            int
	Skipped           int
	Checks            []struct{ Level, Name, Status string }
}

// named returns the names of the checks with the given status.
func (r *checkerReport) named(status string) []string {
	var out []string
	for _, c := range r.Checks {
		if c.Status == status {
			out = append(out, c.Name)
		}
	}
	slices.Sort(out)
	return out
}

// checker returns the command that runs check.py, or skips the test where neither the
// checker nor python3 can be found (a developer's machine); with RCP_CHECKER set, as in CI,
// it fails instead.
func checker(t *testing.T) []string {
	t.Helper()
	path, required := os.Getenv("RCP_CHECKER"), os.Getenv("RCP_CHECKER") != ""
	if !required {
		wd, _ := os.Getwd()
		for dir := wd; ; dir = filepath.Dir(dir) {
			p := filepath.Join(dir, "shared", "third_party", "rcp-conformance", "conformance", "check.py")
			if _, err := os.Stat(p); err == nil {
				path = p
				break
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	python, err := exec.LookPath("python3")
	switch {
	case path == "" && !required:
		t.Skip("the RCP checker is not beside the project; set RCP_CHECKER to its check.py")
	case err != nil && !required:
		t.Skip("python3 is not installed; the RCP checker needs it")
	case err != nil:
		t.Fatalf("RCP_CHECKER is set but python3 is not installed: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("RCP_CHECKER: %v", err)
	}
	return []string{python, path, "--json"}
}

// runChecker runs the checker with args and returns its report.
func runChecker(t *testing.T, args ...string) *checkerReport {
	t.Helper()
	argv := append(checker(t), args...)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) { // it exits non-zero when a check fails
		t.Fatalf("%v: %v\n%s", argv, err, stderr.Bytes())
	}
	at := bytes.Index(out, []byte("\n{"))
	var r checkerReport
	if at < 0 || json.Unmarshal(out[at:], &r) != nil {
		t.Fatalf("%v printed no report:\n%s\n%s", argv, out, stderr.Bytes())
	}
	t.Logf("checker: %d passed, %d failed, %d skipped, certified %v", r.Passed, r.Failed, r.Skipped, r.certified())
	return &r
}

func (r *checkerReport) certified() string {
	if r.CertifiedLevel == nil {
		return "none"
	}
	return *r.CertifiedLevel
}

// The one skip the checker makes against this server: it checks -32003 with index/add, and
// the server advertises index (§7.10).
var inherentSkips = []string{"un-advertised method rejected with -32003"}

func TestCheckerStdio(t *testing.T) {
	r := runChecker(t, "--", bin)
	if r.Failed != 0 || r.certified() != "L2" || !r.DeclarationHonest {
		t.Fatalf("over stdio: certified %s, failed %v; want L2 and none failed", r.certified(), r.named("fail"))
	}
	if got := r.named("skip"); !slices.Equal(got, inherentSkips) {
		t.Errorf("skipped %v, want only %v", got, inherentSkips)
	}
}

// startHTTPBinary runs the binary with -http on a free loopback port and returns its RCP base
// URL once it answers.
func startHTTPBinary(t *testing.T, args ...string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(bin, append([]string{"-http", addr}, args...)...)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	})
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the server on %s did not come up: %v", addr, err)
		}
	}
	t.Cleanup(http.DefaultClient.CloseIdleConnections)
	return "http://" + addr + "/rcp"
}

// In stateless mode every request stands alone (§5.2: a stateless HTTP server may treat every
// request as already initialized, and answer initialize idempotently), so the three checks
// that expect a lifecycle across requests fail by design, and only those.
var statelessByDesign = []string{
	"a failed handshake leaves the session uninitialized",
	"pre-initialize call rejected with -32001",
	"repeated initialize after success rejected with -32600",
}

func TestCheckerHTTPStateless(t *testing.T) {
	r := runChecker(t, "--http", startHTTPBinary(t))
	if got := r.named("fail"); !slices.Equal(got, statelessByDesign) {
		t.Errorf("over HTTP, stateless: failed %v, want exactly the lifecycle checks %v", got, statelessByDesign)
	}
	if got := r.named("skip"); !slices.Equal(got, inherentSkips) {
		t.Errorf("skipped %v, want only %v", got, inherentSkips)
	}
	if r.Passed != len(r.Checks)-len(statelessByDesign)-len(inherentSkips) {
		t.Errorf("%d passed of %d checks", r.Passed, len(r.Checks))
	}
}

// In session mode, initialize returns a token in _meta.session that every later request
// sends in the RCP-Session header; the checker never sends it, so each of its requests is one
// of no session: the gated methods answer -32001 and a second initialize starts a second
// session. Between the checker and the server, sessionKeeper does what a session-mode client
// does, and then every check passes.
func TestCheckerHTTPSessions(t *testing.T) {
	base := startHTTPBinary(t, "-sessions")

	t.Run("as the checker sends them", func(t *testing.T) {
		r := runChecker(t, "--http", base)
		if got := r.named("fail"); !slices.Equal(got, withoutToken) {
			t.Errorf("session mode without the token: failed %v, want exactly %v", got, withoutToken)
		}
	})
	t.Run("with the token a session-mode client sends", func(t *testing.T) {
		keeper := &sessionKeeper{base: base}
		proxy := httptest.NewServer(keeper)
		defer proxy.Close()
		r := runChecker(t, "--http", proxy.URL+"/rcp")
		if r.Failed != 0 || r.certified() != "L2" {
			t.Errorf("with the session token: certified %s, failed %v; want L2 and none failed", r.certified(), r.named("fail"))
		}
		if got := r.named("skip"); !slices.Equal(got, inherentSkips) {
			t.Errorf("skipped %v, want only %v", got, inherentSkips)
		}
		if keeper.token() == "" {
			t.Error("no session token was ever issued")
		}
	})
}

// withoutToken are the checks that fail in session mode when no request carries the token:
// the second initialize, which starts a second session (§5.2), and every check of a gated
// method, answered -32001 as in any session not yet initialized (§13).
var withoutToken = []string{
	"advertised hybrid mode returns hits",
	"funnel violation (candidateK < k) rejected with -32602",
	"index/add re-adding an id upserts or rejects with -32016",
	"index/add returns positional ids (one per document)",
	"index/delete is idempotent (repeat returns deleted:0)",
	"k above maxK is clamped, not rejected",
	"negative k rejected with -32602",
	"repeated initialize after success rejected with -32600",
	"rerank returns a scored ordering",
	"retrieve returns a ranked 'hits' array",
	"unknown method rejected with -32004",
}

// sessionKeeper forwards the checker's requests to a session-mode server as a session-mode
// client would send them: once an initialize has been answered with a token, every later
// request carries it in RCP-Session.
type sessionKeeper struct {
	base string
	mu   sync.Mutex
	tok  string
}

func (k *sessionKeeper) token() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.tok
}

func (k *sessionKeeper) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, k.base+r.URL.Path[len("/rcp"):], bytes.NewReader(body))
	req.Header = r.Header.Clone()
	if tok := k.token(); tok != "" {
		req.Header.Set("RCP-Session", tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	var answer struct {
		Result struct {
			Meta struct {
				Session string `json:"session"`
			} `json:"_meta"`
		} `json:"result"`
	}
	if json.Unmarshal(out, &answer) == nil && answer.Result.Meta.Session != "" {
		k.mu.Lock()
		if k.tok == "" {
			k.tok = answer.Result.Meta.Session
		}
		k.mu.Unlock()
	}
	for name, v := range resp.Header {
		w.Header()[name] = v
	}
	w.WriteHeader(resp.StatusCode)
	w.Write(out)
}
