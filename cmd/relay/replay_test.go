package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/relayrt/relay/internal/hosttest"
	"github.com/relayrt/relay/record"
)

// rtRunEnv runs relay to its end with env added and stdin given.
func rtRunEnv(t *testing.T, env []string, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(rtBin, args...)
	cmd.Env = append(os.Environ(), env...)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	cmd.Stdin = strings.NewReader(stdin)
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

// recordEcho records a session with examples/echo through relay supervise --record: an
// initialize, the tool list, two calls, the second only once the first is answered (and
// with a password, for --redact).
func recordEcho(t *testing.T, file string, extra ...string) {
	t.Helper()
	args := append(append([]string{"supervise", "--record", file}, extra...), "--", rtEcho)
	r := rtStart(t, "", args...)
	if rep := r.Call("initialize", map[string]any{"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "recorder", "version": "1"}}); rep.Error != nil {
		t.Fatalf("initialize = %v", rep)
	}
	r.Notify("notifications/initialized", map[string]any{})
	if rep := r.Call("tools/list", map[string]any{}); rep.Error != nil {
		t.Fatalf("tools/list = %v", rep)
	}
	if rep := r.Tool("echo", map[string]any{"text": "recorded words"}); rep.Text() != "recorded words" {
		t.Fatalf("echo = %v", rep)
	}
	r.Tool("echo", map[string]any{"text": "second", "password": "hunter2"})
	if code := r.exit(true, 10*time.Second); code != 0 {
		t.Fatalf("relay supervise exited %d", code)
	}
}

// A session recorded through relay supervise replays against the same server with no
// difference (exit 0), and against a different server with each difference shown, where it
// is (exit 1).
func TestRecordedSessionReplaysAgainstTheSameServerAndNotAnother(t *testing.T) {
	file := filepath.Join(t.TempDir(), "session.ndjson")
	recordEcho(t, file)
	code, out, errOut := rtRunOnce(t, "replay", file, "--", rtEcho)
	if code != 0 || !strings.Contains(out, "4 answers compared, 0 differences") {
		t.Errorf("replay against the same server: exit %d\n%s%s", code, out, errOut)
	}
	// This test binary as a child is another server: a bare initialize, other tools, and
	// echo without its schema's check.
	code, out, errOut = rtRunEnv(t, []string{rtChildEnv + "="}, "", append([]string{"replay", file, "--"}, rtSelf(t)...)...)
	for _, want := range []string{
		"--- frame 1: initialize",
		`/result/serverInfo: recorded {"name":"relay-echo","version":"1.0.0"}, missing`,
		"--- frame 4: tools/list",
		`/result/content/0/text: recorded "Invalid arguments for tool echo`,
		"4 answers compared, 3 differences",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("replay against another server does not say %q:\n%s%s", want, out, errOut)
		}
	}
	if code != 1 {
		t.Errorf("replay against another server exited %d, want 1", code)
	}
	// --ignore takes what legitimately changes out of the comparison.
	code, out, _ = rtRunEnv(t, []string{rtChildEnv + "="}, "", append([]string{"replay",
		"--ignore", "/result/serverInfo,/result/capabilities,/result/protocolVersion,/result/tools,/result/content/0/text,/result/isError", file, "--"}, rtSelf(t)...)...)
	if code != 0 {
		t.Errorf("replay with every difference ignored: exit %d\n%s", code, out)
	}
}

// A request recorded after an answer is sent only once that answer has come back in the
// replay: the test child answers sleep late, and the next call must not overtake it.
func TestReplayWaitsForTheAnswersThatCameFirst(t *testing.T) {
	file := filepath.Join(t.TempDir(), "session.ndjson")
	r := rtStart(t, "say=recording", append([]string{"supervise", "--record", file, "--"}, rtSelf(t)...)...)
	r.Tool("sleep", map[string]any{"ms": 300})
	r.Tool("pid", nil)
	if code := r.exit(true, 10*time.Second); code != 0 {
		t.Fatalf("relay supervise exited %d", code)
	}
	code, out, errOut := rtRunEnv(t, []string{rtChildEnv + "="}, "", append([]string{"replay", "--ignore", "/result/content/0/text", file, "--"}, rtSelf(t)...)...)
	if code != 0 {
		t.Fatalf("replay: exit %d\n%s%s", code, out, errOut)
	}
	f, _ := os.Open(file)
	defer f.Close()
	frames, err := record.ReadFile(f)
	if err != nil || len(frames) != 4 {
		t.Fatalf("%d frames, %v", len(frames), err)
	}
	if frames[1].Dir != record.Out || frames[2].Dir != record.In {
		t.Fatalf("the recording is not request, answer, request: %+v", frames)
	}
	// The order the replay kept is seen by recording it in turn (relay supervise records a
	// frame to the host before the host can read it, so the order recorded is the order of
	// cause and effect).
	file2 := filepath.Join(t.TempDir(), "replay.ndjson")
	code, out, errOut = rtRunEnv(t, []string{rtChildEnv + "="}, "", append([]string{"replay", file, "--",
		rtBin, "supervise", "--record", file2, "--"}, rtSelf(t)...)...)
	if code != 1 { // pid differs
		t.Fatalf("replay through supervise: exit %d\n%s%s", code, out, errOut)
	}
	f2, _ := os.Open(file2)
	defer f2.Close()
	again, err := record.ReadFile(f2)
	if err != nil || len(again) != 4 {
		t.Fatalf("%d frames in the replay's recording, %v", len(again), err)
	}
	for i, f := range again {
		if f.Dir != frames[i].Dir {
			t.Errorf("frame %d went %s in the replay, %s in the recording: a request overtook an answer\n%s", i+1, f.Dir, frames[i].Dir, f.Msg)
		}
	}
}

// --redact leaves no secret in the file, which is created 0600.
func TestRecordRedactsAndIsPrivate(t *testing.T) {
	file := filepath.Join(t.TempDir(), "session.ndjson")
	recordEcho(t, file, "--redact", "/params/arguments/password,/params/clientInfo/name")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hunter2", `"recorder"`} {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("the recording holds %s:\n%s", secret, b)
		}
	}
	if !bytes.Contains(b, []byte(`"password":"[redacted]"`)) {
		t.Errorf("the password was not replaced by [redacted]:\n%s", b)
	}
	if st, _ := os.Stat(file); runtime.GOOS != "windows" && st.Mode().Perm() != 0o600 {
		t.Errorf("the recording's mode is %v, want 0600", st.Mode().Perm())
	}
	if code, _, errOut := rtRunOnce(t, "supervise", "--redact", "params", "--record", file, "--", rtEcho); code != 2 || !strings.Contains(errOut, "must start with /") {
		t.Errorf("a bad pointer: exit %d, %q", code, errOut)
	}
}

// Past --record-max the recording is rotated once: FILE.1 and FILE, each under the cap.
func TestRecordRotatesAtTheCap(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "session.ndjson")
	r := rtStart(t, "", "supervise", "--record", file, "--record-max", "2KiB", "--", rtEcho)
	for range 30 {
		r.Tool("echo", map[string]any{"text": strings.Repeat("x", 50)})
	}
	if code := r.exit(true, 10*time.Second); code != 0 {
		t.Fatalf("relay supervise exited %d", code)
	}
	for _, p := range []string{file, file + ".1"} {
		st, err := os.Stat(p)
		if err != nil || st.Size() > 2048 || st.Size() == 0 {
			t.Errorf("%s: %v, %v; want a file of at most 2 KiB", p, st, err)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("%d files, want the recording and one previous", len(entries))
	}
}

// relay replay --serve answers as the recorded server: a request by method and params
// (ids and _meta aside), a redacted value matching any, an unrecorded one with an error.
func TestReplayServeAnswersAsRecorded(t *testing.T) {
	file := filepath.Join(t.TempDir(), "session.ndjson")
	recordEcho(t, file, "--redact", "/params/arguments/password")
	in := `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"echo","arguments":{"text":"recorded words"},"_meta":{"progressToken":3}}}
{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"arguments":{"password":"another","text":"second"},"name":"echo"}}
{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"text":"never"}}}
`
	code, out, errOut := rtRunOnce(t, "replay", "--serve", file)
	if code != 0 || out != "" {
		t.Errorf("with no input: exit %d, %q %q", code, out, errOut)
	}
	code, out, errOut = rtRunEnv(t, nil, in, "replay", "--serve", file)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 {
		t.Fatalf("exit %d, %d lines:\n%s%s", code, len(lines), out, errOut)
	}
	for i, want := range []string{`"id":"a"`, `"id":7`, `"id":8`} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("answer %d = %s, want %s", i+1, lines[i], want)
		}
	}
	if !strings.Contains(lines[0], `"text":"recorded words"`) || !strings.Contains(lines[1], `unexpected property`) ||
		!strings.Contains(lines[2], "no recorded answer to tools/call") {
		t.Errorf("answers:\n%s", out)
	}
}

// The official TypeScript client (interop/ts/replay_serve.mjs) takes relay replay --serve
// for the recorded server.
func TestReplayServeWithTheTypeScriptClient(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: starts node")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed")
	}
	dir, err := filepath.Abs(filepath.Join("..", "..", "interop", "ts"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
		t.Skip("interop/ts has no node_modules: run npm ci there")
	}
	file := filepath.Join(t.TempDir(), "session.ndjson")
	recordEcho(t, file)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "--test", "replay_serve.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RELAY_BIN="+rtBin, "RELAY_RECORDING="+file)
	cmd.WaitDelay = 10 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("node --test replay_serve.mjs: %v\n%s", err, out)
	}
}

func TestReplayHelpAndBadUsage(t *testing.T) {
	code, out, errOut := rtRunOnce(t, "replay", "--help")
	usage := out + errOut
	if code != 0 {
		t.Errorf("relay replay --help exited %d", code)
	}
	for _, want := range []string{"Usage: relay replay [flags] FILE -- CMD", "relay replay --serve", "-ignore", "-timeout", "_meta"} {
		if !strings.Contains(usage, want) {
			t.Errorf("relay replay --help does not mention %q:\n%s", want, usage)
		}
	}
	for _, cmd := range []string{"supervise", "bridge"} {
		_, out, errOut := rtRunOnce(t, cmd, "--help")
		for _, want := range []string{"-record ", "-redact", "-record-max", "relay replay"} {
			if !strings.Contains(out+errOut, want) {
				t.Errorf("relay %s --help does not mention %q", cmd, want)
			}
		}
	}
	if _, out, _ := rtRunOnce(t, "help"); !strings.Contains(out, "relay replay --serve FILE") {
		t.Errorf("relay help does not name relay replay:\n%s", out)
	}
	missing := filepath.Join(t.TempDir(), "none.ndjson")
	notRec := filepath.Join(t.TempDir(), "x.ndjson")
	os.WriteFile(notRec, []byte("{\"jsonrpc\":\"2.0\"}\n"), 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"replay"}, "no recording"},
		{[]string{"replay", missing, "--", "x"}, "no such file"},
		{[]string{"replay", notRec, "--", "x"}, "line 1: not a Relay recording"},
		{[]string{"replay", notRec}, "no command; put it after --"},
		{[]string{"replay", "--serve", notRec}, "line 1"},
		{[]string{"replay", "--serve", notRec, "--", "x"}, "takes no command"},
		{[]string{"replay", "--ignore", "x", notRec, "--", "x"}, "must start with /"},
		{[]string{"supervise", "--record-max", "lots", "--record", missing, "--", "x"}, `-record-max "lots"`},
		{[]string{"supervise", "--redact", "/a", "--", "x"}, "add --record"},
	} {
		code, _, errOut := rtRunOnce(t, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("relay %s: exit %d, %q; want 2 and %q", strings.Join(c.args, " "), code, errOut, c.want)
		}
	}
}

var (
	everythingOnce sync.Once
	rtEverything   string
	everythingErr  error
)

// everything builds examples/everything once per test binary.
func everything(t *testing.T) string {
	t.Helper()
	everythingOnce.Do(func() {
		rtEverything = hosttest.Exe(filepath.Join(filepath.Dir(rtBin), "everything"))
		if out, err := exec.Command("go", "build", "-o", rtEverything, "../../examples/everything").CombinedOutput(); err != nil {
			everythingErr = fmt.Errorf("go build examples/everything: %v\n%s", err, out)
		}
	})
	if everythingErr != nil {
		t.Fatal(everythingErr)
	}
	return rtEverything
}

// A server's own request (sampling/createMessage, from examples/everything's test_sampling)
// is recorded with the host's answer; the replay sends that answer once the server asks,
// with the id the server asked with (relay supervise gives the host ids of its own, so the
// recorded id is not the one examples/everything uses when it is replayed to directly), and
// the call's answer is the recorded one.
func TestReplayAnswersTheServersRequests(t *testing.T) {
	srv := everything(t)
	file := filepath.Join(t.TempDir(), "session.ndjson")
	cmd := exec.Command(rtBin, "supervise", "--record", file, "--", srv)
	in, _ := cmd.StdinPipe()
	outPipe, _ := cmd.StdoutPipe()
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := bufio.NewScanner(outPipe)
	lines.Buffer(nil, 1<<20)
	send := func(s string) { io.WriteString(in, s+"\n") }
	// next reads until the answer to id, answering the server's sampling request on the way.
	next := func(id string) string {
		for lines.Scan() {
			var m struct {
				ID     json.RawMessage
				Method string
			}
			json.Unmarshal(lines.Bytes(), &m)
			switch {
			case m.Method == "sampling/createMessage" && m.ID != nil:
				send(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"role":"assistant","content":{"type":"text","text":"the model's words"},"model":"m","stopReason":"endTurn"}}`)
			case string(m.ID) == id && m.Method == "":
				return lines.Text()
			}
		}
		t.Fatalf("no answer to %s; relay's stderr:\n%s", id, errOut.String())
		return ""
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"t","version":"1"}}}`)
	next("1")
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_sampling","arguments":{"prompt":"say something"}}}`)
	if got := next("2"); !strings.Contains(got, "LLM response: the model's words") {
		t.Fatalf("test_sampling = %s", got)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_tool_with_logging","arguments":{}}}`)
	next("3")
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("relay supervise: %v\n%s", err, errOut.String())
	}
	b, _ := os.ReadFile(file)
	if !bytes.Contains(b, []byte(`"dir":"out","msg":{"jsonrpc":"2.0","id":`)) || !bytes.Contains(b, []byte(`"method":"sampling/createMessage"`)) {
		t.Fatalf("the server's request is not in the recording:\n%s", b)
	}
	code, out, stderr := rtRunOnce(t, "replay", "--timeout", "5s", file, "--", srv)
	if code != 0 || !strings.Contains(out, "3 answers compared, 0 differences") {
		t.Errorf("replay: exit %d\n%s%s", code, out, stderr)
	}
}

// A line that is not JSON is recorded as it was and sent again; the server's answer to it
// (id null) is compared with the recorded one.
func TestReplaySendsALineThatIsNotJSON(t *testing.T) {
	file := filepath.Join(t.TempDir(), "session.ndjson")
	in := "this is not json\n" + `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}` + "\n"
	if code, out, errOut := rtRunEnv(t, nil, in, "supervise", "--record", file, "--", rtEcho); code != 0 || !strings.Contains(out, `"code":-32700`) {
		t.Fatalf("relay supervise: exit %d\n%s%s", code, out, errOut)
	}
	b, _ := os.ReadFile(file)
	if !bytes.Contains(b, []byte(`"raw":"this is not json"`)) {
		t.Fatalf("the line is not recorded raw:\n%s", b)
	}
	code, out, errOut := rtRunOnce(t, "replay", file, "--", rtEcho)
	if code != 0 || !strings.Contains(out, "2 answers compared, 0 differences") {
		t.Errorf("replay: exit %d\n%s%s", code, out, errOut)
	}
}
