package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/relayrt/relay/record"
	"github.com/relayrt/relay/stdio"
)

const replayUsage = `Usage: relay replay [flags] FILE -- CMD [ARGS...]
       relay replay --serve [flags] FILE

(Flags go before FILE.)

Replays a recording made with "relay supervise --record FILE" (or "relay bridge --record").

With CMD: starts CMD, a stdio server, and sends it the host's side of the recording in
order; a frame that followed an answer in the recording is sent once that answer has come
back (and the host's answer to a server's request is sent once the server has asked it,
with the id the server gave it). Each answer is compared with the recorded one, and every
difference is printed with the JSON pointer where it is. What never counts: ids (a replay
numbers requests as it likes), _meta anywhere in a message (trace context, progress tokens,
timings), and the pointers given to --ignore. Notifications are counted, not compared: their
order between two answers is the server's to choose. Exit status: 0 when every answer is
what was recorded, 1 when any differs or is missing, 2 when the recording or CMD cannot be
used.

With --serve: acts as the recorded server on stdin and stdout, for a host under test. Each
request gets the answer recorded for the same method and params (ids and _meta ignored, and
a value recorded as "[redacted]" matching any value; a request made several times gets its
recorded answers in turn, then the last again); initialize, when its params match no
recorded one, gets the first recorded answer, so that any client can begin. A request with no
recorded answer gets an error that names it.

Flags:
`

func runReplay(args []string) int {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprint(fs.Output(), replayUsage); fs.PrintDefaults() }
	serve := fs.Bool("serve", false, "act as the recorded server on stdio instead of replaying to CMD")
	ignore := fs.String("ignore", "", "comma-separated JSON pointers into an answer that do not count, e.g. /result/content/0/text")
	timeout := fs.Duration("timeout", 10*time.Second, "how long to wait for each answer before it counts as missing")
	stopWait := fs.Duration("stop-wait", 2*time.Second, "at the end, how long CMD has to exit after its stdin is closed before it is killed")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	rest := fs.Args()
	if len(rest) == 0 {
		fmt.Fprintln(os.Stderr, "relay replay: no recording; e.g. relay replay session.ndjson -- ./server, or relay replay --serve session.ndjson")
		return 2
	}
	file, cmdArgs := rest[0], rest[1:]
	if len(cmdArgs) > 0 && cmdArgs[0] == "--" {
		cmdArgs = cmdArgs[1:]
	}
	switch {
	case *serve && len(cmdArgs) > 0:
		fmt.Fprintln(os.Stderr, "relay replay: --serve takes no command: it is the server")
		return 2
	case !*serve && len(cmdArgs) == 0:
		fmt.Fprintln(os.Stderr, "relay replay: no command; put it after --, e.g. relay replay session.ndjson -- ./server --stdio")
		return 2
	case *timeout <= 0 || *stopWait <= 0:
		fmt.Fprintln(os.Stderr, "relay replay: --timeout and --stop-wait must be positive")
		return 2
	}
	ig, err := record.ParsePointers(*ignore)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay replay: -ignore:", err)
		return 2
	}
	f, err := os.Open(file)
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay replay:", err)
		return 2
	}
	frames, err := record.ReadFile(f)
	f.Close()
	if err != nil {
		fmt.Fprintf(os.Stderr, "relay replay: %s: %v\n", file, err)
		return 2
	}
	if *serve {
		return serveRecording(frames, os.Stdin, os.Stdout)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	rp := &replayer{frames: frames, ignore: ig, timeout: *timeout, out: os.Stdout}
	return rp.run(ctx, cmdArgs, *stopWait)
}

// ---- replaying to a server ----

// replayer sends a recording's host side to a server and compares its answers. It is used
// by one goroutine, run's; the child's output comes to it on a channel from a reader whose
// owner run is.
type replayer struct {
	frames  []record.Frame
	ignore  []record.Pointer
	timeout time.Duration
	out     io.Writer

	// pending maps the id of a request sent to its frame's index; its recorded answer's
	// index is answerOf[index] (-1 when none was recorded).
	pending  map[string]int
	answerOf []int
	// asked holds, by method, the ids of the requests the server has made in the replay, in
	// order; recorded server requests are matched to them by method and rank.
	asked map[string][]json.RawMessage
	rank  []int // by frame index of a recorded server request: its rank among its method's
	// recordedAsks counts the recorded server requests by method.
	recordedAsks map[string]int
	// nullAnswers are the recorded answers with id null (to lines that could not be read),
	// by frame index, in order; the replay's are compared with them in turn.
	nullAnswers []int

	got     <-chan []byte // the server's frames; nil once its output has ended
	toChild chan<- []byte

	compared, differ, notes int
}

func (rp *replayer) run(ctx context.Context, cmdArgs []string, stopWait time.Duration) int {
	cmd := exec.Command(cmdArgs[0], cmdArgs[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay replay:", err)
		return 2
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "relay replay:", err)
		return 2
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "relay replay: cannot start %s: %v\n", cmdArgs[0], err)
		return 2
	}
	// Two actors, both owned here: a reader of the child's output and a writer to its
	// input, so that a child that writes while it is being written to never deadlocks with
	// relay. Both end at stop, below.
	got := make(chan []byte, 64)
	readDone := make(chan struct{})
	go func() { // ends at the child's EOF, or when stop closes outPipe
		defer close(readDone)
		defer close(got)
		r := stdio.NewReader(outPipe, 0)
		for {
			line, err := r.Next()
			var tl *stdio.TooLargeError
			switch {
			case err == nil:
				got <- append([]byte(nil), line...)
			case errors.As(err, &tl):
				got <- []byte(tl.Error()) // not JSON: reported as such
			default:
				return
			}
		}
	}()
	toChild := make(chan []byte)
	writeDone := make(chan error, 1)
	go func() { // ends when toChild is closed
		var werr error
		for line := range toChild {
			if werr == nil {
				_, werr = in.Write(line)
			}
		}
		writeDone <- werr
	}()
	rp.got, rp.toChild = got, toChild
	stopped := false
	stop := func() { // close stdin, wait, kill; then wait for both actors and the child
		if stopped {
			return
		}
		stopped = true
		close(toChild)
		var werr error
		select {
		case werr = <-writeDone:
		case <-time.After(stopWait): // a write blocked on a child that stopped reading
			in.Close()
			werr = <-writeDone
		}
		in.Close()
		if werr != nil {
			fmt.Fprintf(rp.out, "the server stopped reading its input: %v\n", werr)
			rp.differ++
		}
		grace := time.NewTimer(stopWait)
		defer grace.Stop()
		for killed := 0; ; {
			select {
			case line, ok := <-got:
				if !ok {
					if err := cmd.Wait(); err != nil && killed == 0 { // said, not counted: a recording has no exit status
						fmt.Fprintf(rp.out, "the server exited: %v\n", err)
					}
					return
				}
				rp.take(line)
			case <-grace.C:
				killed++
				if killed == 1 {
					cmd.Process.Kill()
				} else { // a grandchild holds the output open: stop reading it
					outPipe.Close()
				}
				grace.Reset(stopWait)
			}
		}
	}
	defer stop()

	rp.prepare()
	for i, f := range rp.frames {
		if f.Dir != record.In {
			continue
		}
		if !rp.waitFor(ctx, i) {
			break
		}
		line, ok := rp.outgoing(ctx, i)
		if ok && !rp.send(ctx, append(line, '\n')) {
			break
		}
	}
	rp.waitFor(ctx, len(rp.frames)) // every answer still owed
	stop()
	<-readDone
	for id, i := range rp.pending {
		if rp.answerOf[i] >= 0 { // one the recording has no answer to either is no difference
			rp.report(i, fmt.Sprintf("no answer (id %s)", id), nil)
		}
	}
	fmt.Fprintf(rp.out, "relay replay: %d answers compared, %s; %d notifications from the server (not compared)\n",
		rp.compared, plural(rp.differ, "difference"), rp.notes)
	if ctx.Err() != nil {
		return 2
	}
	if rp.differ > 0 {
		return 1
	}
	return 0
}

// send hands a line to the writer, taking what the server says meanwhile.
func (rp *replayer) send(ctx context.Context, line []byte) bool {
	for {
		select {
		case rp.toChild <- line:
			return true
		case l, ok := <-rp.got:
			if !ok {
				rp.outputEnded()
				continue
			}
			rp.take(l)
		case <-ctx.Done():
			return false
		}
	}
}

// outputEnded reports every answer still owed: none will come.
func (rp *replayer) outputEnded() {
	rp.got = nil
	for id, i := range rp.pending {
		rp.report(i, "no answer: the server's output ended", nil)
		delete(rp.pending, id)
	}
}

// prepare finds each recorded request's answer, and ranks the server's requests.
func (rp *replayer) prepare() {
	n := len(rp.frames)
	rp.answerOf, rp.rank = make([]int, n), make([]int, n)
	rp.pending, rp.asked = map[string]int{}, map[string][]json.RawMessage{}
	open := map[string]int{} // the host's requests not yet answered in the recording, by id
	perMethod := map[string]int{}
	rp.recordedAsks = perMethod
	for i := range rp.frames {
		rp.answerOf[i] = -1
		m := rp.frames[i].Parse()
		switch {
		case rp.frames[i].Dir == record.In && m.Kind == record.Request:
			open[m.ID] = i
		case rp.frames[i].Dir == record.Out && m.Kind == record.Response && m.ID == "":
			rp.nullAnswers = append(rp.nullAnswers, i)
		case rp.frames[i].Dir == record.Out && m.Kind == record.Response:
			if j, ok := open[m.ID]; ok {
				rp.answerOf[j] = i
				delete(open, m.ID)
			}
		case rp.frames[i].Dir == record.Out && m.Kind == record.Request:
			rp.rank[i] = perMethod[m.Method]
			perMethod[m.Method]++
		}
	}
}

// waitFor waits until every request sent whose answer was recorded before frame limit has
// been answered in the replay, or given up on. It returns false when ctx ends.
func (rp *replayer) waitFor(ctx context.Context, limit int) bool {
	waiting, deadline := -1, time.Time{}
	for {
		owed := -1
		for _, i := range rp.pending {
			if a := rp.answerOf[i]; a >= 0 && a < limit && (owed < 0 || i < owed) {
				owed = i
			}
		}
		if owed < 0 {
			return true
		}
		if owed != waiting { // each answer has --timeout of its own
			waiting, deadline = owed, time.Now().Add(rp.timeout)
		}
		if !rp.receive(ctx, waiting, deadline) {
			return false
		}
	}
}

// receive takes one frame from the server; at deadline it gives up on the request waiting
// (its frame's index), which is reported missing.
func (rp *replayer) receive(ctx context.Context, waiting int, deadline time.Time) bool {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case line, ok := <-rp.got:
		if !ok {
			rp.outputEnded()
			return true
		}
		rp.take(line)
	case <-timer.C:
		for id, i := range rp.pending {
			if i == waiting {
				rp.report(i, fmt.Sprintf("no answer within %s (--timeout)", rp.timeout), nil)
				delete(rp.pending, id)
			}
		}
	}
	return true
}

// take handles one frame from the server.
func (rp *replayer) take(line []byte) {
	f := record.Frame{Msg: line}
	if !json.Valid(line) {
		fmt.Fprintf(rp.out, "the server wrote a line that is not JSON: %s\n", record.Summary(line))
		rp.differ++
		return
	}
	m := f.Parse()
	switch m.Kind {
	case record.Notification:
		rp.notes++
	case record.Request:
		if len(rp.asked[m.Method]) >= rp.recordedAsks[m.Method] {
			// Not in the recording, so no answer to send: the server may wait for one, and the
			// call it serves time out. Kept no further, so that memory stays bounded.
			fmt.Fprintf(rp.out, "the server asked %s more often than in the recording (not answered): %s\n", m.Method, record.Summary(line))
			rp.differ++
			return
		}
		var id struct{ ID json.RawMessage }
		json.Unmarshal(line, &id)
		rp.asked[m.Method] = append(rp.asked[m.Method], id.ID)
	case record.Response:
		if m.ID == "" { // id null: the answer to a line that could not be read, matched in order
			if len(rp.nullAnswers) == 0 {
				fmt.Fprintf(rp.out, "an answer with id null, not in the recording: %s\n", record.Summary(line))
				rp.differ++
				return
			}
			a := rp.nullAnswers[0]
			rp.nullAnswers = rp.nullAnswers[1:]
			rp.compared++
			if ds := record.Compare(rp.frames[a].Msg, line, rp.ignore); len(ds) > 0 {
				rp.differ++
				fmt.Fprintf(rp.out, "--- frame %d: the answer with id null\n    answer differs from the recording\n", a+1)
				for _, d := range ds {
					fmt.Fprintf(rp.out, "    %s\n", d)
				}
			}
			return
		}
		i, ok := rp.pending[m.ID]
		if !ok {
			fmt.Fprintf(rp.out, "an answer to no request pending (id %s): %s\n", m.ID, record.Summary(line))
			rp.differ++
			return
		}
		delete(rp.pending, m.ID)
		rp.compared++
		a := rp.answerOf[i]
		if a < 0 {
			return // the recording ended before its answer: nothing to compare with
		}
		if ds := record.Compare(rp.frames[a].Msg, line, rp.ignore); len(ds) > 0 {
			rp.report(i, "answer differs from the recording", ds)
		}
	default:
		fmt.Fprintf(rp.out, "the server wrote a frame that is not a JSON-RPC message: %s\n", record.Summary(line))
		rp.differ++
	}
}

// outgoing is frame i as it is to be sent: a request is remembered as pending; the host's
// answer to a server's request waits for the server to ask, and takes the id it was asked
// with. ok is false when it is not to be sent.
func (rp *replayer) outgoing(ctx context.Context, i int) ([]byte, bool) {
	f := rp.frames[i]
	switch {
	case f.Raw != "":
		return []byte(f.Raw), true
	case f.Skipped > 0:
		fmt.Fprintf(rp.out, "frame %d: a line of %d bytes was not recorded, and is not sent\n", i+1, f.Skipped)
		return nil, false
	}
	m := f.Parse()
	switch m.Kind {
	case record.Request:
		rp.pending[m.ID] = i
	case record.Response:
		// Which recorded server request does this answer?
		q := -1
		for j := i - 1; j >= 0; j-- {
			if g := rp.frames[j]; g.Dir == record.Out {
				if gm := g.Parse(); gm.Kind == record.Request && gm.ID == m.ID {
					q = j
					break
				}
			}
		}
		if q < 0 {
			return f.Msg, true // answers nothing recorded: sent as it was
		}
		method := rp.frames[q].Parse().Method
		deadline := time.Now().Add(rp.timeout)
		for len(rp.asked[method]) <= rp.rank[q] {
			if !time.Now().Before(deadline) || ctx.Err() != nil {
				fmt.Fprintf(rp.out, "frame %d: the server did not ask %s as in the recording; the host's answer is not sent\n", i+1, method)
				rp.differ++
				return nil, false
			}
			if !rp.receive(ctx, -1, deadline) {
				return nil, false
			}
		}
		var msg map[string]json.RawMessage
		if json.Unmarshal(f.Msg, &msg) != nil {
			return f.Msg, true
		}
		msg["id"] = rp.asked[method][rp.rank[q]]
		b, err := json.Marshal(msg)
		if err != nil {
			return f.Msg, true
		}
		return b, true
	}
	return f.Msg, true
}

// report prints one difference found for the request at frame i.
func (rp *replayer) report(i int, what string, ds []record.Difference) {
	rp.differ++
	m := rp.frames[i].Parse()
	params := strings.TrimSpace(string(m.Params))
	if params == "" {
		params = "{}"
	}
	fmt.Fprintf(rp.out, "--- frame %d: %s %s\n    %s\n", i+1, m.Method, record.Summary([]byte(params)), what)
	for _, d := range ds {
		fmt.Fprintf(rp.out, "    %s\n", d)
	}
}

// ---- acting as the recorded server ----

// serveRecording answers a host on in and out from the recording, one frame at a time, on
// the calling goroutine, until in ends.
func serveRecording(frames []record.Frame, in io.Reader, out io.Writer) int {
	// The recorded requests by method, each with its answers in the recording's order.
	type exchange struct {
		params  json.RawMessage
		answers []json.RawMessage
		next    int
	}
	byMethod := map[string][]*exchange{}
	open := map[string]record.Message{}
	for _, f := range frames {
		m := f.Parse()
		switch {
		case f.Dir == record.In && m.Kind == record.Request:
			open[m.ID] = m
		case f.Dir == record.Out && m.Kind == record.Response:
			q, ok := open[m.ID]
			if !ok {
				continue
			}
			delete(open, m.ID)
			var ex *exchange
			for _, e := range byMethod[q.Method] {
				if record.Matches(e.params, q.Params) && record.Matches(q.Params, e.params) {
					ex = e
					break
				}
			}
			if ex == nil {
				ex = &exchange{params: q.Params}
				byMethod[q.Method] = append(byMethod[q.Method], ex)
			}
			ex.answers = append(ex.answers, f.Msg)
		}
	}
	r := stdio.NewReader(in, 0)
	for {
		line, err := r.Next()
		var tl *stdio.TooLargeError
		switch {
		case errors.As(err, &tl):
			writeLine(out, errorFrame(json.RawMessage("null"), -32700, "relay replay --serve: "+tl.Error(), nil))
			continue
		case err != nil:
			return 0
		}
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(line, &req) != nil {
			writeLine(out, errorFrame(json.RawMessage("null"), -32700, "relay replay --serve: the line is not JSON", nil))
			continue
		}
		if req.Method == nil || len(req.ID) == 0 || string(req.ID) == "null" {
			continue // notifications and the host's answers need no reply
		}
		var ex *exchange
		for _, e := range byMethod[*req.Method] {
			if record.Matches(e.params, req.Params) {
				ex = e
				break
			}
		}
		if ex == nil && *req.Method == "initialize" && len(byMethod["initialize"]) > 0 {
			ex = byMethod["initialize"][0] // any client may begin
		}
		if ex == nil {
			if *req.Method == "ping" {
				writeLine(out, []byte(`{"jsonrpc":"2.0","id":`+string(req.ID)+`,"result":{}}`))
				continue
			}
			writeLine(out, errorFrame(req.ID, -32603, fmt.Sprintf("relay replay --serve: no recorded answer to %s with these params (ids and _meta aside); record a session that makes this request", *req.Method),
				map[string]any{"method": *req.Method, "params": req.Params}))
			continue
		}
		answer := ex.answers[ex.next]
		if ex.next < len(ex.answers)-1 {
			ex.next++
		}
		var msg map[string]json.RawMessage
		if json.Unmarshal(answer, &msg) != nil {
			continue // a recorded answer that is not an object is not one
		}
		msg["id"] = req.ID
		b, _ := json.Marshal(msg)
		writeLine(out, b)
	}
}

func errorFrame(id json.RawMessage, code int, message string, data any) []byte {
	e := map[string]any{"code": code, "message": message}
	if data != nil {
		e["data"] = data
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": e})
	return b
}

func writeLine(w io.Writer, b []byte) {
	w.Write(append(b, '\n'))
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
