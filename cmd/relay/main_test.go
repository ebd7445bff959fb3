package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/relayrt/relay/internal/hosttest"
	"github.com/relayrt/relay/internal/proc"
)

// The tests run the built relay binary. Its child is either the built examples/echo or this
// test binary re-executed as a small stdio server (chosen by rtChildEnv in TestMain).
const rtChildEnv = "RELAY_TEST_CHILD"

// rtTagEnv names a version of the test child: its tool tag says it, and its tools/list has
// one more tool, tag-VERSION.
const rtTagEnv = "RELAY_TEST_TAG"

var rtBin, rtEcho string

func TestMain(m *testing.M) {
	if mode, ok := os.LookupEnv(rtChildEnv); ok {
		os.Exit(rtChild(mode))
	}
	dir, err := os.MkdirTemp("", "relay-test")
	if err != nil {
		panic(err)
	}
	rtBin, rtEcho = hosttest.Exe(filepath.Join(dir, "relay")), hosttest.Exe(filepath.Join(dir, "echo"))
	for _, b := range [][2]string{{rtBin, "."}, {rtEcho, "../../examples/echo"}} {
		if out, err := exec.Command("go", "build", "-o", b[0], b[1]).CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", b[1], err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// ---- the child: a small MCP-ish stdio server ----

// rtChild serves echo and sleep (annotated readOnlyHint and idempotentHint), danger (not
// annotated), pid, tag (rtTagEnv), and exit (mode "legacy": and refuses server/discover); mode "exit=N" exits with N at once, mode "silent" reads
// nothing and answers nothing until it is killed, mode "say=TEXT" writes TEXT to stderr
// first.
func rtChild(mode string) int {
	if n, ok := strings.CutPrefix(mode, "exit="); ok {
		code, _ := strconv.Atoi(n)
		return code
	}
	if mode == "silent" {
		time.Sleep(time.Hour)
		return 0
	}
	if say, ok := strings.CutPrefix(mode, "say="); ok { // then serve
		fmt.Fprintln(os.Stderr, say)
	}
	var mu sync.Mutex
	write := func(v any) {
		b, _ := json.Marshal(v)
		mu.Lock()
		os.Stdout.Write(append(b, '\n'))
		mu.Unlock()
	}
	text := func(id json.RawMessage, s string) {
		write(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": s}}}})
	}
	safe := map[string]any{"readOnlyHint": true, "idempotentHint": true}
	r := bufio.NewReader(os.Stdin)
	for {
		line, err := r.ReadBytes('\n')
		var m struct {
			ID     json.RawMessage
			Method string
			Params struct {
				Name      string
				Arguments struct {
					Text string
					MS   int
					Code int
				}
			}
		}
		if json.Unmarshal(line, &m) == nil && m.ID != nil {
			a := m.Params.Arguments
			switch {
			case m.Method == "server/discover" && mode == "legacy": // the initialize generation only
				write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "error": map[string]any{"code": -32601, "message": "Method not found"}})
			case m.Method == "tools/list":
				tools := []any{
					map[string]any{"name": "echo", "inputSchema": map[string]any{"type": "object"}, "annotations": safe},
					map[string]any{"name": "sleep", "inputSchema": map[string]any{"type": "object"}, "annotations": safe},
					map[string]any{"name": "danger", "inputSchema": map[string]any{"type": "object"}},
				}
				if tag := os.Getenv(rtTagEnv); tag != "" { // a version of the server: its list differs
					tools = append(tools, map[string]any{"name": "tag-" + tag, "inputSchema": map[string]any{"type": "object"}})
				}
				write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"tools": tools}})
			case m.Method == "server/discover" && mode != "legacy" && os.Getenv(rtTagEnv) != "":
				write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"supportedVersions": []string{"2026-07-28"},
					"capabilities": map[string]any{"tools": map[string]any{"listChanged": true}},
					"_meta":        map[string]any{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "rt", "version": os.Getenv(rtTagEnv)}}}})
			case m.Method == "initialize" && os.Getenv(rtTagEnv) != "": // a versioned server declares its tools
				write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{"protocolVersion": "2025-11-25",
					"capabilities": map[string]any{"tools": map[string]any{"listChanged": true}}, "serverInfo": map[string]any{"name": "rt", "version": os.Getenv(rtTagEnv)}}})
			case m.Method != "tools/call":
				write(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{}})
			case m.Params.Name == "echo":
				text(m.ID, a.Text)
			case m.Params.Name == "danger":
				text(m.ID, "danger:"+a.Text)
			case m.Params.Name == "pid":
				text(m.ID, strconv.Itoa(os.Getpid()))
			case m.Params.Name == "tag":
				text(m.ID, os.Getenv(rtTagEnv))
			case m.Params.Name == "exit":
				os.Exit(a.Code)
			case m.Params.Name == "sleep":
				go func(id json.RawMessage) {
					time.Sleep(time.Duration(a.MS) * time.Millisecond)
					text(id, fmt.Sprintf("slept %d ms", a.MS))
				}(m.ID)
			}
		}
		if err != nil {
			return 0
		}
	}
}

// rtSelf is the command line of this test binary as a child.
func rtSelf(t *testing.T) []string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe}
}

// ---- running relay ----

type rtRun struct {
	*hosttest.Host
	t       *testing.T
	cmd     *exec.Cmd
	in      io.WriteCloser
	stderr  bytes.Buffer
	exited  chan struct{}
	waitErr error
}

// rtStart runs relay with args; childMode, when set, is given to children that are this
// test binary.
func rtStart(t *testing.T, childMode string, args ...string) *rtRun {
	t.Helper()
	cmd := exec.Command(rtBin, args...)
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	if childMode != "" {
		cmd.Env = append(cmd.Env, rtChildEnv+"="+childMode)
	}
	r := &rtRun{t: t, cmd: cmd, exited: make(chan struct{})}
	cmd.Stderr = &r.stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r.in = in
	r.Host = hosttest.New(t, "relay", in, out)
	go func() { <-r.Done(); r.waitErr = cmd.Wait(); close(r.exited) }()
	t.Cleanup(func() {
		select {
		case <-r.exited:
		default:
			cmd.Process.Kill()
			<-r.exited
		}
		if t.Failed() {
			t.Logf("relay's stderr:\n%s", rtTail(r.stderr.String(), 3000))
		}
	})
	return r
}

func rtTail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// exit closes relay's stdin (unless closeIn is false) and returns its exit code.
func (r *rtRun) exit(closeIn bool, within time.Duration) int {
	r.t.Helper()
	if closeIn {
		r.in.Close()
	}
	select {
	case <-r.exited:
	case <-time.After(within):
		r.t.Fatalf("relay did not exit within %s", within)
	}
	r.CheckAnswers()
	var ee *exec.ExitError
	if errors.As(r.waitErr, &ee) {
		return ee.ExitCode()
	}
	if r.waitErr != nil {
		r.t.Fatalf("relay: %v", r.waitErr)
	}
	return 0
}

// ---- /proc ----

// rtNothingLeft checks that no process supervised by relay (marked in its environment)
// still runs, and that this process has no zombie. It looks in /proc: where there is none it
// finds nothing to report.
func rtNothingLeft(t *testing.T, relay int) {
	t.Helper()
	mark := "RELAY_SUPERVISED_BY=" + strconv.Itoa(relay) + "." // then the child's number
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/environ"); err == nil && (bytes.HasPrefix(b, []byte(mark)) || bytes.Contains(b, []byte("\x00"+mark))) {
			t.Errorf("process %d started by relay %d is still running", p, relay)
			killPid(p)
		}
		if st, ok := proc.Read(p); ok && st.PPID == os.Getpid() && !st.Alive() {
			t.Errorf("zombie %d left", p)
		}
	}
}

func rtRunOnce(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(rtBin, args...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Stdin = strings.NewReader("")
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return code, o.String(), e.String()
}

// ---- tests ----

func TestHelp(t *testing.T) {
	code, out, errOut := rtRunOnce(t, "supervise", "--help")
	if code != 0 {
		t.Errorf("relay supervise --help exited %d, want 0", code)
	}
	usage := out + errOut
	for _, want := range []string{"Usage: relay supervise [flags] -- CMD", "-restart-limit", "-backoff", "-replay", "-probe", "-timeout", "-stop-wait"} {
		if !strings.Contains(usage, want) {
			t.Errorf("relay supervise --help does not print %q:\n%s", want, usage)
		}
	}
	code, out, _ = rtRunOnce(t, "help")
	if code != 0 || !strings.Contains(out, "relay supervise [flags] -- CMD") {
		t.Errorf("relay help: exit %d, %q", code, out)
	}
}

func TestBadUsageExits2(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "Usage:"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"supervise"}, "no command; put it after --"},
		{[]string{"supervise", "--"}, "no command; put it after --"},
		{[]string{"supervise", "--nope", "--", "x"}, "flag provided but not defined: -nope"},
		{[]string{"supervise", "--restart", "sometimes", "--", "x"}, `-restart "sometimes": want always, on-failure or never`},
		{[]string{"supervise", "--restart-limit", "lots", "--", "x"}, `-restart-limit "lots": want N/DURATION`},
		{[]string{"supervise", "--restart-limit", "0/1m", "--", "x"}, `-restart-limit "0/1m"`},
		{[]string{"supervise", "--restart-limit", "5/soon", "--", "x"}, `-restart-limit "5/soon"`},
		{[]string{"supervise", "--backoff", "50ms..10ms", "--", "x"}, `-backoff "50ms..10ms": want MIN..MAX`},
		{[]string{"supervise", "--backoff", "10ms", "--", "x"}, `-backoff "10ms"`},
		{[]string{"supervise", "--replay", "sometimes", "--", "x"}, `-replay "sometimes": want safe, annotated or none`},
		{[]string{"supervise", "--probe", "banana", "--", "x"}, `invalid value "banana" for flag -probe`},
	} {
		code, _, errOut := rtRunOnce(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("relay %s: exit %d, stderr %q; want 2 and %q", strings.Join(c.args, " "), code, rtTail(errOut, 300), c.want)
		}
	}
}

// Past the restart limit relay answers what is pending with an error that says it gave up
// (not that the server restarted), and exits non-zero.
func TestSuperviseGivesUpExitsNonZero(t *testing.T) {
	r := rtStart(t, "exit=3", append([]string{"supervise", "--restart-limit", "2/1m", "--backoff", "1ms..2ms", "--"}, rtSelf(t)...)...)
	relay := r.cmd.Process.Pid
	_, ch := r.Send("tools/call", map[string]any{"name": "danger", "arguments": map[string]any{"text": "x"}})
	select {
	case rep := <-ch:
		// Not replayable, so it may have been in flight on a child that exited: the restart
		// error, or if it never reached one, the error that says relay gave up; either names
		// the exit.
		if rep.Error == nil || (!rep.IsRestartError() && rep.Error.Data["reason"] != "gave up") || !strings.Contains(rep.Error.Message, "exit code 3") {
			t.Errorf("answer = %v, want the restart error or the one that says relay gave up, naming the exit", rep)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no answer")
	}
	if code := r.exit(false, 15*time.Second); code == 0 {
		t.Error("relay exited 0 after giving up, want non-zero")
	}
	if !strings.Contains(r.stderr.String(), "gave up") {
		t.Errorf("stderr does not say it gave up:\n%s", rtTail(r.stderr.String(), 2000))
	}
	rtNothingLeft(t, relay)
}

// killPid kills one process (SIGKILL on Unix); a pid that is not a real one (0 or 1, say
// from a failed lookup) is refused, since kill(0) would signal the test's own process group.
func killPid(pid int) error {
	if pid <= 1 {
		return os.ErrInvalid
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

// A command that cannot run is not retried, even under --restart-limit 0: relay says so at
// once on stderr, naming the command and the cause; answers the host's initialize, and each
// request after it, with that error within seconds; and exits non-zero when the host closes
// its input.
func TestSuperviseCommandThatCannotRunIsAnsweredAndExitsNonZero(t *testing.T) {
	const missing = "/nonexistent/relay-test-server"
	r := rtStart(t, "", "supervise", "--restart-limit", "0", "--backoff", "10ms..50ms", "--", missing)
	for _, method := range []string{"initialize", "tools/list"} {
		_, ch := r.Send(method, map[string]any{})
		rep, ok := r.Wait(ch, 5*time.Second)
		if !ok {
			t.Fatalf("%s: no answer within 5 s", method)
		}
		if rep.Error == nil || rep.Error.Data["reason"] != "cannot start" || !strings.Contains(rep.Error.Message, missing) {
			t.Errorf("%s: %v, want an error that names %s and why it cannot start", method, rep, missing)
		}
	}
	if code := r.exit(true, 10*time.Second); code == 0 {
		t.Error("relay exited 0, want non-zero")
	}
	if errOut := r.stderr.String(); !strings.Contains(errOut, missing) || !strings.Contains(errOut, "cannot start the child") {
		t.Errorf("stderr does not say which command cannot start:\n%s", rtTail(errOut, 2000))
	}
}

// relay bridge with a child that exits at once ends with one error that says why, and no
// stray "<nil>".
func TestBridgeChildThatExitsAtOnceIsReported(t *testing.T) {
	for _, cmd := range []string{"false", "/nonexistent/relay-test-server"} {
		code, _, errOut := rtRunOnce(t, "bridge", "--pool", "1", "--listen", "127.0.0.1:0", "--backoff", "1ms..2ms", "--", cmd)
		last := errOut[strings.LastIndex(strings.TrimSpace(errOut), "\n")+1:]
		if code != 1 || !strings.Contains(last, "relay bridge: ") || strings.Contains(errOut, "<nil>") {
			t.Errorf("relay bridge -- %s: exit %d, last line %q; want 1 and one error with no <nil>", cmd, code, last)
		}
		if cmd != "false" && !strings.Contains(last, "cannot start") {
			t.Errorf("relay bridge -- %s: %q does not say the command cannot start", cmd, last)
		}
	}
}

// EOF with a request the child never answers: relay gives it --drain, answers it with an
// error that says relay is stopping (not that the server restarted), stops the child and
// exits 0, instead of running on.
func TestSuperviseEOFWithASilentChildExits(t *testing.T) {
	r := rtStart(t, "silent", append([]string{"supervise", "--drain", "300ms", "--stop-wait", "300ms", "--"}, rtSelf(t)...)...)
	_, ch := r.Send("tools/call", map[string]any{"name": "echo", "arguments": map[string]any{"text": "x"}})
	if code := r.exit(true, 10*time.Second); code != 0 {
		t.Errorf("relay exited %d, want 0", code)
	}
	rep, ok := r.Wait(ch, time.Second)
	if !ok || rep.Error == nil || rep.Error.Data["reason"] != "proxy stopping" {
		t.Errorf("the request the child never answered: %v (answered %v), want the stopping error", rep, ok)
	}
}

// The child's stderr reaches relay's stderr by default, each line prefixed with the child's
// name; --quiet-child drops it.
func TestSuperviseChildStderrPassesThrough(t *testing.T) {
	const said = "the child says hello on stderr"
	name := filepath.Base(rtSelf(t)[0])
	for _, quiet := range []bool{false, true} {
		args := []string{"supervise"}
		if quiet {
			args = append(args, "--quiet-child")
		}
		r := rtStart(t, "say="+said, append(append(args, "--"), rtSelf(t)...)...)
		if rep := r.Call("tools/list", map[string]any{}); rep.Error != nil { // the child runs: it has spoken
			t.Fatalf("tools/list = %v", rep)
		}
		if code := r.exit(true, 10*time.Second); code != 0 {
			t.Errorf("relay exited %d", code)
		}
		got := strings.Contains(r.stderr.String(), name+": "+said+"\n")
		if got == quiet {
			t.Errorf("quiet %v: relay's stderr has the child's line %q: %v\n%s", quiet, name+": "+said, got, rtTail(r.stderr.String(), 2000))
		}
	}
}
