//go:build unix

package supervise

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The tests run real processes: the test binary re-executes itself as the child, its
// behaviour chosen by tcModeEnv (a comma-separated list of options, see runTestChild).
const (
	tcModeEnv = "SUPERVISE_TEST_CHILD" // the child's behaviour
	tcLogEnv  = "SUPERVISE_TEST_LOG"   // a file the child appends what it did to
)

// runTestChildIfAsked turns the binary into a test child when tcModeEnv says so.
func runTestChildIfAsked() {
	if mode, ok := os.LookupEnv(tcModeEnv); ok {
		os.Exit(runTestChild(mode))
	}
	if dir, ok := os.LookupEnv(tcSupervisorEnv); ok {
		os.Exit(runTestSupervisor(dir))
	}
}

// tcCommand returns the command that starts the test binary as a child with these options.
func tcCommand(t testing.TB, mode, logPath string) Command {
	exe, err := os.Executable()
	if err != nil && t != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), tcModeEnv+"="+mode, tcGorace())
	if logPath != "" {
		env = append(env, tcLogEnv+"="+logPath)
	}
	return Command{Path: exe, Env: env, Name: "test-child"}
}

// tcGorace keeps a child built with -race from sleeping a second at exit (the race
// detector's atexit_sleep_ms), which would blur the timing of the stop sequence.
func tcGorace() string {
	return strings.TrimSpace("GORACE=" + os.Getenv("GORACE") + " atexit_sleep_ms=0")
}

// ---- the child ----

// tcServer is a small MCP-ish stdio server. Options (comma separated):
//
//	echo            the default server (tools echo, sleep, danger, exit, hang, pid, level, ...)
//	strict          a legacy server: requests other than initialize and ping fail until
//	                initialize was answered and notifications/initialized received
//	exit=N          exit with code N at once
//	stderr=TEXT     write TEXT and a newline to stderr (before exit=N, when both are given)
//	ignore-eof      keep running after stdin ends
//	ignore-term     ignore SIGTERM
//	noisy           write 1 MiB to stderr (1,024 lines) before every answer
//	noisy-line      write one 1.5 MiB line to stderr before every answer
//	spawn=devnull   start a grandchild that calls setsid and stays alive, its stdio /dev/null
//	spawn=inherit   the same, but the grandchild inherits stdout and stderr
//	spawn=zombie    start a short-lived grandchild (in its group) and never wait for it: a zombie
//	lines=N         write N notifications after the hello
//	slowstartfile=P sleep 1.5 s before serving if the file P exists
//	slowlist=MS     sleep MS before answering tools/list
//	safefile=P      annotate danger idempotentHint if the file P exists when it starts
//	grandchild      (the grandchild itself) sleep
//
// At startup it writes a notification {"method":"hello","params":{"pid":P,"grandchild":G}}.
type tcServer struct {
	strict, noisy, noisyLine bool

	out        sync.Mutex
	hung       atomic.Bool
	mu         sync.Mutex
	inited     bool // initialize answered
	ready      bool // and notifications/initialized received
	inits      int
	level      string
	sleeps     map[string]context.CancelFunc
	cancels    []string
	aborted    int
	held       [][]byte
	logPath    string
	trace      bool // log "got METHOD" for every message received
	slowList   time.Duration
	dangerSafe bool
}

func runTestChild(mode string) int {
	s := &tcServer{sleeps: map[string]context.CancelFunc{}, logPath: os.Getenv(tcLogEnv), level: "info"}
	var ignoreEOF bool
	grandchild, lines := 0, 0
	for _, opt := range strings.Split(mode, ",") {
		key, val, _ := strings.Cut(opt, "=")
		switch key {
		case "grandchild":
			time.Sleep(time.Hour)
			return 0
		case "exit":
			n, _ := strconv.Atoi(val)
			return n
		case "stderr":
			fmt.Fprintln(os.Stderr, val)
		case "strict":
			s.strict = true
		case "ignore-eof":
			ignoreEOF = true
		case "ignore-term":
			signal.Ignore(syscall.SIGTERM)
		case "noisy":
			s.noisy = true
		case "noisy-line":
			s.noisyLine = true
		case "spawn":
			grandchild = tcSpawn(val)
		case "lines":
			lines, _ = strconv.Atoi(val)
		case "trace":
			s.trace = true
		case "slowstartfile":
			if _, err := os.Stat(val); err == nil {
				time.Sleep(1500 * time.Millisecond)
			}
		case "safefile":
			if _, err := os.Stat(val); err == nil {
				s.dangerSafe = true
			}
		case "slowlist":
			n, _ := strconv.Atoi(val)
			s.slowList = time.Duration(n) * time.Millisecond
		}
	}
	s.log("start %d", os.Getpid())
	s.notify("hello", map[string]any{"pid": os.Getpid(), "grandchild": grandchild})
	for i := range lines {
		s.notify("line", map[string]any{"n": i})
	}
	r := bufio.NewReaderSize(os.Stdin, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			s.handle(line)
		}
		if err != nil {
			break
		}
	}
	s.log("eof %d", os.Getpid())
	if ignoreEOF {
		time.Sleep(time.Hour)
	}
	return 0
}

func tcSpawn(how string) int {
	exe, _ := os.Executable()
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), tcModeEnv+"=grandchild")
	if how != "zombie" {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	}
	switch how {
	case "inherit":
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	case "zombie":
		cmd.Env = append(os.Environ(), tcModeEnv+"=exit=0")
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "spawn:", err)
		return 0
	}
	pid := cmd.Process.Pid
	if how == "zombie" { // wait until it has exited, without reaping it
		for i := 0; i < 500 && tcState(pid) != 'Z'; i++ {
			time.Sleep(2 * time.Millisecond)
		}
	}
	cmd.Process.Release()
	return pid
}

// log appends a line to the log file, if any. Lines are short, so O_APPEND keeps them whole.
func (s *tcServer) log(format string, args ...any) {
	if s.logPath == "" {
		return
	}
	f, err := os.OpenFile(s.logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintf(f, format+"\n", args...)
	f.Close()
}

func (s *tcServer) write(frame []byte) {
	s.out.Lock()
	defer s.out.Unlock()
	if s.hung.Load() {
		return
	}
	if s.noisy {
		line := append(bytes.Repeat([]byte("x"), 1023), '\n')
		os.Stderr.Write(bytes.Repeat(line, 1024))
	}
	if s.noisyLine {
		os.Stderr.Write(append(bytes.Repeat([]byte("y"), 3<<19), '\n'))
	}
	os.Stdout.Write(append(frame, '\n'))
}

func (s *tcServer) notify(method string, params any) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	s.write(b)
}

func (s *tcServer) reply(id json.RawMessage, result any) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": result})
	s.write(b)
}

func (s *tcServer) fail(id json.RawMessage, code int, msg string) {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	s.write(b)
}

func tcText(text string) map[string]any {
	return map[string]any{"content": []any{map[string]any{"type": "text", "text": text}}}
}

var tcTools = []any{
	map[string]any{"name": "echo", "inputSchema": map[string]any{"type": "object"},
		"annotations": map[string]any{"readOnlyHint": true, "idempotentHint": true}},
	map[string]any{"name": "sleep", "inputSchema": map[string]any{"type": "object"},
		"annotations": map[string]any{"readOnlyHint": true, "idempotentHint": true}},
	map[string]any{"name": "danger", "inputSchema": map[string]any{"type": "object"}},
	map[string]any{"name": "exit", "inputSchema": map[string]any{"type": "object"}},
	map[string]any{"name": "hang", "inputSchema": map[string]any{"type": "object"}},
	// crash says it only reads, and kills the server each time it is called: a poison request.
	map[string]any{"name": "crash", "inputSchema": map[string]any{"type": "object"},
		"annotations": map[string]any{"readOnlyHint": true}},
}

func (s *tcServer) handle(line []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal(line, &m); err != nil {
		s.fail(json.RawMessage("null"), -32700, "parse error")
		return
	}
	if m.Method == "" {
		return // a response: this server asks nothing
	}
	if s.trace {
		s.log("got %s", m.Method)
	}
	if m.ID == nil {
		s.notification(m.Method, m.Params)
		return
	}
	s.mu.Lock()
	ready := s.ready
	s.mu.Unlock()
	if s.strict && !ready && m.Method != "initialize" && m.Method != "ping" {
		s.fail(m.ID, -32002, "not initialized")
		return
	}
	switch m.Method {
	case "initialize":
		s.mu.Lock()
		s.inits++
		s.inited = true
		s.mu.Unlock()
		s.reply(m.ID, map[string]any{"protocolVersion": "2025-06-18",
			"capabilities": map[string]any{"tools": map[string]any{}, "logging": map[string]any{}},
			"serverInfo":   map[string]any{"name": "test-child", "version": "1"}})
	case "ping", "server/discover":
		s.reply(m.ID, map[string]any{})
	case "logging/setLevel":
		var p struct{ Level string }
		json.Unmarshal(m.Params, &p)
		s.mu.Lock()
		s.level = p.Level
		s.mu.Unlock()
		s.reply(m.ID, map[string]any{})
	case "tools/list":
		time.Sleep(s.slowList)
		tools := tcTools
		if s.dangerSafe {
			tools = append([]any(nil), tcTools...)
			tools[2] = map[string]any{"name": "danger", "inputSchema": map[string]any{"type": "object"},
				"annotations": map[string]any{"idempotentHint": true}}
		}
		s.reply(m.ID, map[string]any{"tools": tools})
	case "tools/call":
		s.call(m.ID, m.Params)
	default:
		s.fail(m.ID, -32601, "method not found: "+m.Method)
	}
}

func (s *tcServer) notification(method string, params json.RawMessage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch method {
	case "notifications/initialized":
		s.ready = s.inited
	case "notifications/cancelled":
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
		}
		json.Unmarshal(params, &p)
		id := string(p.RequestID)
		s.cancels = append(s.cancels, id)
		if cancel := s.sleeps[id]; cancel != nil {
			cancel()
			s.aborted++
		}
	}
}

func (s *tcServer) call(id json.RawMessage, params json.RawMessage) {
	var p struct {
		Name      string
		Arguments struct {
			Text string
			MS   int
			Code int
			Hold bool
		}
	}
	json.Unmarshal(params, &p)
	a := p.Arguments
	switch p.Name {
	case "echo":
		s.reply(id, tcText(a.Text))
	case "sleep":
		if a.Text != "" {
			s.log("sleep %s %d", a.Text, os.Getpid())
		}
		ctx, cancel := context.WithCancel(context.Background())
		s.mu.Lock()
		s.sleeps[string(id)] = cancel
		s.mu.Unlock()
		go func() {
			defer cancel()
			t := time.NewTimer(time.Duration(a.MS) * time.Millisecond)
			defer t.Stop()
			select {
			case <-t.C:
				s.reply(id, tcText("slept "+strconv.Itoa(a.MS)))
			case <-ctx.Done(): // answered anyway: the proxy must drop it
				s.fail(id, -32800, "cancelled")
			}
			s.mu.Lock()
			delete(s.sleeps, string(id))
			s.mu.Unlock()
		}()
	case "danger": // not safe to repeat: the log shows how often it ran
		s.log("exec %s", a.Text)
		if a.Hold {
			b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "result": tcText("danger:" + a.Text)})
			s.mu.Lock()
			s.held = append(s.held, b)
			s.mu.Unlock()
			return
		}
		go func() {
			time.Sleep(time.Duration(a.MS) * time.Millisecond)
			s.reply(id, tcText("danger:"+a.Text))
			s.log("answered %s", a.Text)
		}()
	case "exit": // write the held answers, then exit without answering
		s.mu.Lock()
		held := bytes.Join(s.held, []byte("\n"))
		s.mu.Unlock()
		if len(held) > 0 {
			s.write(held)
		}
		os.Exit(a.Code)
	case "crash":
		s.log("crash %d", os.Getpid())
		os.Exit(2)
	case "hang": // stop reading stdin and answering, for good
		s.hung.Store(true)
		time.Sleep(time.Hour)
	case "pid":
		s.reply(id, tcText(strconv.Itoa(os.Getpid())))
	case "announce":
		s.notify("notifications/tools/list_changed", nil)
		s.reply(id, tcText("announced"))
	case "level":
		s.mu.Lock()
		level := s.level
		s.mu.Unlock()
		s.reply(id, tcText(level))
	case "inits":
		s.mu.Lock()
		n := s.inits
		s.mu.Unlock()
		s.reply(id, tcText(strconv.Itoa(n)))
	case "cancelled":
		s.mu.Lock()
		text := fmt.Sprintf("%d:%s", s.aborted, strings.Join(s.cancels, ","))
		s.mu.Unlock()
		s.reply(id, tcText(text))
	default:
		s.fail(id, -32602, "unknown tool "+p.Name)
	}
}

// ---- processes, seen from the process table (listProcs: /proc on Linux, sysctl on macOS) ----

// tcStat returns the state of pid ('Z' for a zombie, 'S' otherwise) and its parent; ok is
// false when it does not exist.
func tcStat(pid int) (state byte, ppid int, ok bool) {
	for _, p := range listProcs() {
		if p.pid == pid {
			if p.dead {
				return 'Z', p.ppid, true
			}
			return 'S', p.ppid, true
		}
	}
	return 0, 0, false
}

// tcState returns the state letter of pid, or 0 when it does not exist.
func tcState(pid int) byte {
	st, _, _ := tcStat(pid)
	return st
}

// tcChildren returns the pids whose parent is this process, with their states.
func tcChildren() map[int]byte {
	me := os.Getpid()
	out := map[int]byte{}
	for _, p := range listProcs() {
		if p.ppid == me {
			out[p.pid] = 'S'
			if p.dead {
				out[p.pid] = 'Z'
			}
		}
	}
	return out
}

// tcIsTestChild reports whether pid runs this binary as a child (not a grandchild, nor a
// guard).
func tcIsTestChild(pid int) bool {
	env := environ(pid)
	if hasEnv(env, guardEnv+"=1") {
		return false
	}
	for _, e := range env {
		if strings.HasPrefix(e, tcModeEnv+"=") {
			return e != tcModeEnv+"=grandchild"
		}
	}
	return false
}

// tcFindChild returns a live test child (a descendant of this process, under its guard or
// not) other than not, or 0.
func tcFindChild(not int) int {
	for _, pid := range relatives(listProcs(), os.Getpid(), "") {
		if pid != not && tcState(pid) == 'S' && tcIsTestChild(pid) {
			return pid
		}
	}
	return 0
}

// tcCurrentChild waits for a live test child other than not, and returns its pid.
func tcCurrentChild(t testing.TB, not int, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		if pid := tcFindChild(not); pid != 0 {
			return pid
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Errorf("no new child process appeared within %s", within)
	return 0
}

// tcNoProcessesLeft fails if this process has any child left, running or zombie. Children
// that are still being reaped get a moment.
func tcNoProcessesLeft(t testing.TB) {
	t.Helper()
	var left map[int]byte
	for i := 0; i < 200; i++ {
		if left = tcChildren(); len(left) == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	for pid, st := range left {
		if st == 'Z' {
			t.Errorf("zombie left: pid %d (state Z, parent: the test process)", pid)
		} else {
			t.Errorf("process left running: pid %d (state %c)", pid, st)
		}
	}
	tcCleanupProcesses(left)
}

// tcCleanupProcesses kills and reaps what a failed test left, so later tests start clean.
func tcCleanupProcesses(left map[int]byte) {
	for pid := range left {
		killPid(pid)
		var ws syscall.WaitStatus
		syscall.Wait4(pid, &ws, 0, nil)
	}
}

// tcGone waits until pid no longer exists (a zombie counts as existing) and reports
// whether it went.
func tcGone(pid int, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for {
		if tcState(pid) == 0 {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// killPid sends SIGKILL to one process; a pid that is not a real one (0 or 1, say from a
// failed lookup) is refused, since kill(0) would signal the test's own process group.
func killPid(pid int) error {
	if pid <= 1 {
		return syscall.EINVAL
	}
	return syscall.Kill(pid, syscall.SIGKILL)
}
