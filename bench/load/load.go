// Package load drives any MCP server that speaks newline-delimited JSON-RPC
// over stdio with pipelined tools/call requests, and measures throughput,
// latency and the server's peak memory.
//
// A [Session] starts the server command and performs the handshake once;
// [Session.Drive] then keeps a fixed number of requests outstanding until a
// count or a duration is reached, and [Session.Stop] ends the child. [Run]
// does all three for a one-off measurement. Benchmarks use the three steps
// so that the process start and the handshake stay outside the timer.
//
// The handshake first probes the stateless server/discover method of
// protocol version 2026-07-28. A server that answers it with a result is
// treated as modern, and every later request carries the protocol _meta in
// its params. Otherwise (an error reply, or no reply within 2 s) the driver
// falls back to initialize with protocol version 2025-11-25, followed by
// notifications/initialized.
//
// The package uses the standard library only, and golang.org/x/sys/windows
// on Windows for the job object that measures the child's memory.
package load

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Protocol versions the handshake offers.
const (
	// ModernProtocol is the version probed with server/discover.
	ModernProtocol = "2026-07-28"
	// LegacyProtocol is the version sent in initialize when the server does
	// not answer server/discover with a result.
	LegacyProtocol = "2025-11-25"
)

const (
	// discoverTimeout bounds the wait for the server/discover reply,
	// process start-up included.
	discoverTimeout = 2 * time.Second
	// initializeTimeout bounds the wait for the initialize reply.
	initializeTimeout = 30 * time.Second
	// stopGrace is how long Stop waits for the child to exit after closing
	// its stdin before killing it.
	stopGrace = 2 * time.Second
	// readBufferSize is the size of the stdout reader's buffer; longer lines
	// are assembled in a separate growing buffer.
	readBufferSize = 1 << 20
	// writeBufferSize is the size of the stdin writer's buffer.
	writeBufferSize = 64 << 10
	// stderrTail is how many trailing bytes of the child's stderr are kept
	// for error messages.
	stderrTail = 4 << 10
	// spareSlots is the room in the reader's queue beyond InFlight, for
	// requests that the server sends to the client (such as ping).
	spareSlots = 64
)

// modernMeta is the _meta member that every request to a modern server
// carries in its params.
const modernMeta = `{"io.modelcontextprotocol/protocolVersion":"` + ModernProtocol +
	`","io.modelcontextprotocol/clientCapabilities":{}}`

// Config describes the server to start and the load to put on it.
type Config struct {
	// Command is the server's argument vector; Command[0] is looked up in
	// PATH when it contains no slash.
	Command []string
	// Dir is the child's working directory; empty means the current one.
	Dir string
	// Env is the child's environment; nil means the current process's.
	Env []string
	// Stderr receives the child's standard error; nil discards it. The
	// last few KiB are kept for error messages either way.
	Stderr io.Writer

	// Tool is the name of the tool that every tools/call request calls.
	Tool string
	// Args is the JSON object sent as the tool's arguments; nil means {}.
	Args json.RawMessage
	// InFlight is how many requests are kept outstanding at once; values
	// below 1 mean 1.
	InFlight int
	// Requests is how many requests Run sends in all. Zero means send for
	// Duration instead.
	Requests int
	// Duration is how long Run keeps sending when Requests is zero.
	// Requests still outstanding when it elapses are waited for.
	Duration time.Duration
}

// Result is the outcome of one measured drive.
type Result struct {
	// Protocol is the protocol version the handshake settled on.
	Protocol string
	// Requests is the number of answers received.
	Requests int
	// Errors is the number of answers that had an error member or a result
	// with isError set to true.
	Errors int
	// Elapsed is the time from the first request sent to the last answer
	// received.
	Elapsed time.Duration
	// Latencies holds the time from sending each request to receiving its
	// answer, sorted in ascending order.
	Latencies []time.Duration
	// PeakRSSKiB is the child's peak resident set size in KiB. Drive reads
	// it at the end of the drive, while the child still runs, where the OS
	// tells it then: on Linux (VmHWM in /proc/<pid>/status) and on Windows
	// (PeakProcessMemoryUsed of a job object the child is put in at start:
	// its peak commit, Windows' nearest measure). macOS and the BSDs tell it
	// only once the child has exited (ru_maxrss of its rusage), so there
	// Drive leaves it zero; Run fills it in after stopping the child on
	// every OS, as Session.PeakRSSKiB does after Stop. Zero where the OS
	// does not tell it.
	PeakRSSKiB int64
}

// PerSecond returns the throughput: answers received per second of Elapsed.
func (r Result) PerSecond() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests) / r.Elapsed.Seconds()
}

// Percentile returns the p-th percentile latency, p being in [0, 100] (50
// for the median, 99 for p99), by the nearest-rank method. It returns zero
// when there are no latencies.
func (r Result) Percentile(p float64) time.Duration { return Percentile(r.Latencies, p) }

// Percentile returns the p-th percentile of latencies sorted in ascending order, p being in
// [0, 100], by the nearest-rank method; zero when there are none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(n)))
	return sorted[min(max(rank, 1), n)-1]
}

// String summarises the result on one line.
func (r Result) String() string {
	return fmt.Sprintf("%d requests (%d errors) in %v: %.0f req/s, p50 %v, p99 %v, peak RSS %d KiB",
		r.Requests, r.Errors, r.Elapsed.Round(time.Millisecond), r.PerSecond(),
		r.Percentile(50), r.Percentile(99), r.PeakRSSKiB)
}

// Run starts cfg.Command, performs the handshake, sends cfg.Requests
// tools/call requests (or sends for cfg.Duration) keeping cfg.InFlight
// outstanding, and stops the child. The returned Result is valid even when
// the error is not nil, holding what was measured before the failure.
func Run(ctx context.Context, cfg Config) (Result, error) {
	s, err := Start(ctx, cfg)
	if err != nil {
		return Result{}, err
	}
	res, err := s.Drive(ctx, cfg.Requests, cfg.Duration)
	err = errors.Join(err, s.Stop())
	res.PeakRSSKiB = s.PeakRSSKiB()
	return res, err
}

// A Session is a running server that has completed the handshake. Its
// methods must not be called concurrently.
type Session struct {
	cfg      Config
	inFlight int
	protocol string
	modern   bool
	params   []byte // the params of every tools/call request

	cmd    *exec.Cmd
	stdin  io.WriteCloser
	w      *bufio.Writer
	stderr *tailBuffer

	in         chan message  // messages from the reader; closed at stdout EOF
	readErr    error         // why the reader stopped; read after in is closed
	quit       chan struct{} // closed by Stop to release the reader
	readerDone chan struct{}
	keepResult atomic.Bool // whether the reader keeps result bodies

	nextID  int64
	scratch []byte
	stopped bool
	peak    peakMeter
	peakRSS int64         // the peak read by Stop
	cpu     time.Duration // the child's CPU time, read by Stop
	ownCPU  time.Duration // the child's alone, without its children's, read by Stop
}

// message is what the reader passes on: the answer to one of our requests,
// a request from the server, or an error answer that names no request.
type message struct {
	id     int64     // the answer's integer id
	hasID  bool      // whether id was an integer
	method string    // non-empty for a request from the server
	rawID  []byte    // the id of a request from the server
	isErr  bool      // error member present, or result.isError true
	errMsg string    // the error member, for diagnostics
	result []byte    // the result member, only while keepResult is set
	at     time.Time // when the line was read
}

// Start starts cfg.Command and performs the handshake. ctx governs the
// child's whole life: cancelling it kills the child. On success the caller
// must call [Session.Stop].
func Start(ctx context.Context, cfg Config) (*Session, error) {
	if len(cfg.Command) == 0 {
		return nil, errors.New("load: empty Command")
	}
	if cfg.Tool == "" {
		return nil, errors.New("load: empty Tool")
	}
	args := []byte("{}")
	if len(cfg.Args) > 0 {
		var buf bytes.Buffer
		if err := json.Compact(&buf, cfg.Args); err != nil {
			return nil, fmt.Errorf("load: Args: %w", err)
		}
		args = buf.Bytes()
	}
	s := &Session{
		cfg:        cfg,
		inFlight:   max(cfg.InFlight, 1),
		stderr:     &tailBuffer{},
		quit:       make(chan struct{}),
		readerDone: make(chan struct{}),
		nextID:     1,
	}
	s.in = make(chan message, s.inFlight+spareSlots)

	cmd := exec.CommandContext(ctx, cfg.Command[0], cfg.Command[1:]...)
	cmd.Dir = cfg.Dir
	cmd.Env = cfg.Env
	cmd.WaitDelay = time.Second
	if cfg.Stderr != nil {
		cmd.Stderr = io.MultiWriter(s.stderr, cfg.Stderr)
	} else {
		cmd.Stderr = s.stderr
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("load: start %s: %w", cfg.Command[0], err)
	}
	s.cmd, s.stdin = cmd, stdin
	s.peak = newPeakMeter(cmd.Process)
	s.w = bufio.NewWriterSize(stdin, writeBufferSize)
	go s.read(stdout)

	if err := s.handshake(ctx); err != nil {
		_ = s.Stop()
		return nil, fmt.Errorf("load: handshake with %s: %w%s", cfg.Command[0], err, s.stderr.suffix())
	}

	p := make([]byte, 0, len(args)+len(cfg.Tool)+len(modernMeta)+40)
	p = append(p, `{"name":`...)
	p = strconv.AppendQuote(p, cfg.Tool)
	p = append(p, `,"arguments":`...)
	p = append(p, args...)
	if s.modern {
		p = append(p, `,"_meta":`...)
		p = append(p, modernMeta...)
	}
	s.params = append(p, '}')
	return s, nil
}

// Protocol returns the protocol version the handshake settled on:
// [ModernProtocol] or [LegacyProtocol].
func (s *Session) Protocol() string { return s.protocol }

// PID returns the child's process id.
func (s *Session) PID() int { return s.cmd.Process.Pid }

// PeakRSSKiB returns the child's peak resident set size in KiB: so far
// while the child runs (zero where the OS tells it only after exit, see
// Result.PeakRSSKiB), and once the session is stopped, the larger of what
// was read just before stopping it and what its exit tells.
func (s *Session) PeakRSSKiB() int64 {
	if s.stopped {
		return s.peakRSS
	}
	return s.peak.live()
}

// CPU returns, once Stop has returned, the CPU time (user and system) the child used from its
// start to its exit, with that of the processes it started and waited for (a supervisor's
// children, say), as the OS reports it when the child is waited for. Zero before Stop, and
// where the OS does not tell it.
func (s *Session) CPU() time.Duration { return s.cpu }

// OwnCPU returns, once Stop has returned, the CPU time the child itself used up to the close
// of its stdin, without that of the processes it started: a supervisor's own cost. Zero
// before Stop, and where the OS does not tell it (it does on Linux).
func (s *Session) OwnCPU() time.Duration { return s.ownCPU }

// handshake probes server/discover and falls back to initialize.
func (s *Session) handshake(ctx context.Context) error {
	s.keepResult.Store(true)
	defer s.keepResult.Store(false)

	discover := `{"_meta":` + modernMeta + `}`
	m, err := s.request(ctx, "server/discover", discover, discoverTimeout)
	if err == nil && !m.isErr {
		s.modern, s.protocol = true, ModernProtocol
		return nil
	}
	if err != nil && !errors.Is(err, errTimeout) {
		return err
	}
	initialize := `{"protocolVersion":"` + LegacyProtocol + `","capabilities":{},` +
		`"clientInfo":{"name":"relay-bench-load","version":"1.0.0"}}`
	m, err = s.request(ctx, "initialize", initialize, initializeTimeout)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	if m.isErr {
		return fmt.Errorf("initialize: %s", m.errMsg)
	}
	var init struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(m.result, &init); err == nil && init.ProtocolVersion != "" {
		s.protocol = init.ProtocolVersion
	} else {
		s.protocol = LegacyProtocol
	}
	s.w.WriteString(`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	return s.w.Flush()
}

// errTimeout reports that an answer did not come in time.
var errTimeout = errors.New("no answer in time")

// request sends one request with the given raw params and waits up to
// timeout for its answer, answering requests from the server meanwhile and
// ignoring answers to anything else.
func (s *Session) request(ctx context.Context, method, params string, timeout time.Duration) (message, error) {
	id := s.nextID
	s.nextID++
	s.w.WriteString(`{"jsonrpc":"2.0","id":`)
	s.w.WriteString(strconv.FormatInt(id, 10))
	s.w.WriteString(`,"method":`)
	s.w.WriteString(strconv.Quote(method))
	s.w.WriteString(`,"params":`)
	s.w.WriteString(params)
	s.w.WriteString("}\n")
	if err := s.w.Flush(); err != nil {
		return message{}, fmt.Errorf("write %s: %w", method, err)
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		select {
		case m, ok := <-s.in:
			if !ok {
				return message{}, s.closedError(1)
			}
			switch {
			case m.method != "":
				if err := s.answer(m); err != nil {
					return message{}, err
				}
			case m.hasID && m.id == id:
				return m, nil
			case !m.hasID:
				// An error that names no request, such as a parse error:
				// ours is the only request outstanding, so it is the answer.
				return m, nil
			}
		case <-timer.C:
			return message{}, fmt.Errorf("%s: %w", method, errTimeout)
		case <-ctx.Done():
			return message{}, ctx.Err()
		}
	}
}

// Call sends one tools/call request outside any measurement and returns
// its result member. An answer with an error member is returned as an
// error; a result with isError set is returned as it is.
func (s *Session) Call(ctx context.Context, tool string, args json.RawMessage) (json.RawMessage, error) {
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, args); err != nil {
		return nil, fmt.Errorf("load: args: %w", err)
	}
	p := []byte(`{"name":`)
	p = strconv.AppendQuote(p, tool)
	p = append(p, `,"arguments":`...)
	p = append(p, buf.Bytes()...)
	if s.modern {
		p = append(p, `,"_meta":`...)
		p = append(p, modernMeta...)
	}
	p = append(p, '}')
	s.keepResult.Store(true)
	defer s.keepResult.Store(false)
	m, err := s.request(ctx, "tools/call", string(p), initializeTimeout)
	if err != nil {
		return nil, fmt.Errorf("load: tools/call %s: %w", tool, err)
	}
	if m.result == nil {
		return nil, fmt.Errorf("load: tools/call %s: %s", tool, m.errMsg)
	}
	return json.RawMessage(m.result), nil
}

// Drive sends tools/call requests for the session's Tool and Args, keeping
// InFlight of them outstanding, and waits for every answer. With
// requests > 0 it sends exactly that many; otherwise it sends until d has
// elapsed. The Result is valid even when the error is not nil, holding what
// was measured before the failure.
//
// Cancelling ctx interrupts Drive even while it is blocked writing to a
// server that no longer reads, by closing the server's stdin: after a
// cancelled Drive the session is only good for Stop.
func (s *Session) Drive(ctx context.Context, requests int, d time.Duration) (Result, error) {
	if s.stopped {
		return Result{}, errors.New("load: Drive after Stop")
	}
	if requests <= 0 && d <= 0 {
		return Result{}, errors.New("load: neither a request count nor a duration")
	}
	defer context.AfterFunc(ctx, func() { s.stdin.Close() })()
	res := Result{Protocol: s.protocol}
	want := s.inFlight
	if requests > 0 {
		want = requests
	}
	res.Latencies = make([]time.Duration, 0, want)
	pending := make(map[int64]time.Time, s.inFlight)
	sent := 0
	start := time.Now()
	var last time.Time

	finish := func(err error) (Result, error) {
		if !last.IsZero() {
			res.Elapsed = last.Sub(start)
		}
		slices.Sort(res.Latencies)
		res.PeakRSSKiB = s.peak.live()
		return res, err
	}
	more := func() bool {
		if requests > 0 {
			return sent < requests
		}
		return time.Since(start) < d
	}
	fill := func() error {
		n := 0
		for len(pending) < s.inFlight && more() {
			id := s.nextID
			s.nextID++
			pending[id] = time.Now()
			s.writeCall(id)
			sent++
			n++
		}
		if n == 0 {
			return nil
		}
		return s.w.Flush()
	}
	handle := func(m message) error {
		switch {
		case m.method != "":
			return s.answer(m)
		case !m.hasID:
			return fmt.Errorf("load: error answer without id: %s", m.errMsg)
		}
		t, ok := pending[m.id]
		if !ok {
			return nil // a late answer to a handshake probe
		}
		delete(pending, m.id)
		res.Requests++
		if m.isErr {
			res.Errors++
		}
		res.Latencies = append(res.Latencies, m.at.Sub(t))
		last = m.at
		return nil
	}

	if err := fill(); err != nil {
		return finish(fmt.Errorf("load: write: %w", err))
	}
	for len(pending) > 0 {
		select {
		case m, ok := <-s.in:
			if !ok {
				return finish(fmt.Errorf("load: %w%s", s.closedError(len(pending)), s.stderr.suffix()))
			}
			if err := handle(m); err != nil {
				return finish(err)
			}
			// Take whatever else is already queued before writing, so that
			// refills go out in batches.
		drain:
			for {
				select {
				case m, ok := <-s.in:
					if !ok {
						return finish(fmt.Errorf("load: %w%s", s.closedError(len(pending)), s.stderr.suffix()))
					}
					if err := handle(m); err != nil {
						return finish(err)
					}
				default:
					break drain
				}
			}
		case <-ctx.Done():
			return finish(ctx.Err())
		}
		if err := fill(); err != nil {
			return finish(fmt.Errorf("load: write: %w", err))
		}
	}
	return finish(nil)
}

// writeCall buffers one tools/call request with the given id.
func (s *Session) writeCall(id int64) {
	b := append(s.scratch[:0], `{"jsonrpc":"2.0","id":`...)
	b = strconv.AppendInt(b, id, 10)
	b = append(b, `,"method":"tools/call","params":`...)
	s.scratch = b
	s.w.Write(b)
	s.w.Write(s.params)
	s.w.WriteString("}\n")
}

// answer replies to a request from the server: ping gets an empty result,
// anything else "method not found".
func (s *Session) answer(m message) error {
	s.w.WriteString(`{"jsonrpc":"2.0","id":`)
	s.w.Write(m.rawID)
	if m.method == "ping" {
		s.w.WriteString(`,"result":{}}` + "\n")
	} else {
		s.w.WriteString(`,"error":{"code":-32601,"message":"method not found"}}` + "\n")
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("load: write: %w", err)
	}
	return nil
}

// closedError describes the end of the child's stdout while answers were
// still expected.
func (s *Session) closedError(outstanding int) error {
	why := "server closed its stdout"
	if s.readErr != nil {
		why = "reading server stdout: " + s.readErr.Error()
	}
	return fmt.Errorf("%s with %d request(s) outstanding", why, outstanding)
}

// Stop ends the child: it closes the child's stdin, waits up to 2 s for it
// to exit and kills it otherwise. It reports an error only when the child
// had to be killed or could not be waited for; the exit status of a child
// that exits by itself is ignored. Calling Stop again does nothing.
func (s *Session) Stop() error {
	if s.stopped {
		return nil
	}
	s.stopped = true
	s.peakRSS = s.peak.live()
	s.ownCPU = ownCPU(s.cmd.Process.Pid)
	defer s.peak.close()
	_ = s.w.Flush()
	_ = s.stdin.Close()

	waited := make(chan error, 1)
	go func() { waited <- s.cmd.Wait() }()
	timer := time.NewTimer(stopGrace)
	defer timer.Stop()
	var err error
	select {
	case werr := <-waited:
		var exit *exec.ExitError
		if werr != nil && !errors.As(werr, &exit) {
			err = fmt.Errorf("load: wait: %w", werr)
		}
	case <-timer.C:
		_ = s.cmd.Process.Kill()
		<-waited
		err = fmt.Errorf("load: %s did not exit within %v of its stdin closing; killed", s.cfg.Command[0], stopGrace)
	}
	if ps := s.cmd.ProcessState; ps != nil {
		s.peakRSS = max(s.peakRSS, s.peak.exited(ps))
		s.cpu = ps.UserTime() + ps.SystemTime()
	}
	close(s.quit)
	<-s.readerDone
	return err
}

// read runs on its own goroutine: it reads the child's stdout line by line
// and passes answers and server requests to s.in, dropping notifications
// and anything that is not a JSON object.
func (s *Session) read(r io.Reader) {
	defer close(s.readerDone)
	defer close(s.in)
	br := bufio.NewReaderSize(r, readBufferSize)
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			at := time.Now()
			if m, ok := s.parse(line, at); ok {
				select {
				case s.in <- m:
				case <-s.quit:
					return
				}
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				s.readErr = err
			}
			return
		}
	}
}

// parse classifies one line of output.
func (s *Session) parse(line []byte, at time.Time) (message, bool) {
	var id, method, errv, result []byte
	ok := skimObject(line, func(k, v []byte) {
		switch string(k) {
		case "id":
			id = v
		case "method":
			method = v
		case "error":
			errv = v
		case "result":
			result = v
		}
	})
	if !ok {
		return message{}, false
	}
	isNull := func(v []byte) bool { return v == nil || string(v) == "null" }
	if method != nil {
		if isNull(id) {
			return message{}, false // a notification
		}
		name, err := unquote(method)
		if err != nil || name == "" {
			return message{}, false
		}
		return message{method: name, rawID: bytes.Clone(id), at: at}, true
	}
	m := message{at: at}
	if n, err := strconv.ParseInt(string(id), 10, 64); err == nil {
		m.id, m.hasID = n, true
	} else if len(id) > 2 && id[0] == '"' {
		if n, err := strconv.ParseInt(string(id[1:len(id)-1]), 10, 64); err == nil {
			m.id, m.hasID = n, true
		}
	}
	switch {
	case errv != nil:
		m.isErr = true
		m.errMsg = string(errv[:min(len(errv), 512)])
	case result != nil:
		skimObject(result, func(k, v []byte) {
			if string(k) == "isError" && string(v) == "true" {
				m.isErr = true
			}
		})
		if s.keepResult.Load() {
			m.result = bytes.Clone(result)
		}
	default:
		return message{}, false
	}
	if !m.hasID && !m.isErr {
		return message{}, false
	}
	return m, true
}

// unquote decodes a raw JSON string.
func unquote(v []byte) (string, error) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' && bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), nil
	}
	var str string
	err := json.Unmarshal(v, &str)
	return str, err
}

// tailBuffer is an io.Writer that keeps the last stderrTail bytes written
// to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

// Write implements io.Writer.
func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - stderrTail; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	return len(p), nil
}

// suffix returns the kept stderr as a suffix for an error message, or ""
// when there is none.
func (t *tailBuffer) suffix() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return ""
	}
	return "; server stderr:\n" + s
}
