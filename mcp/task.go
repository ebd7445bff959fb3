package mcp

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// Tasks (io.modelcontextprotocol/tasks, SEP-2663): a tools/call the server answers with a
// task handle instead of the tool's result. The tool then runs on a goroutine of the
// server's, which outlives the request, and the client polls tasks/get for the result,
// answers the tool's questions with tasks/update, and may stop it with tasks/cancel. Only
// 2026-07-28 requests that declare the extension in their clientCapabilities get tasks.

// ExtensionTasks is the tasks extension's identifier, under capabilities.extensions.
const ExtensionTasks = "io.modelcontextprotocol/tasks"

// TaskSupport says whether a tool's calls may run as tasks.
type TaskSupport uint8

const (
	// TaskForbidden, the default, runs every call in its request.
	TaskForbidden TaskSupport = iota
	// TaskOptional runs a call as a task when its client declared the tasks extension, and
	// in its request otherwise.
	TaskOptional
	// TaskRequired runs every call as a task; a 2026-07-28 request that did not declare the
	// extension is refused with -32021 (Missing Required Client Capability), and a call of
	// the initialize generation gets a tool error saying so.
	TaskRequired
)

// A ToolOption tunes how AddTool serves a tool.
type ToolOption func(*toolOptions)

type toolOptions struct {
	tasks  TaskSupport
	wholly bool // the handler is the task's body (AsTask), not the handler's StartTask
}

// AsTask runs the tool's calls as tasks, as support allows: the handler, unchanged, becomes
// the body of the task. What it asks the client (Elicit, CreateMessage, ListRoots) becomes
// the task's inputRequests, answered with tasks/update; the handler then runs again from the
// start with the answers, as it does for a 2026-07-28 input_required retry.
func AsTask(support TaskSupport) ToolOption {
	return func(o *toolOptions) { o.tasks, o.wholly = support, true }
}

// StartsTask declares that the tool supports tasks as support says, and that its handler
// decides where the task begins, with CallToolRequest.StartTask: what the handler does before
// (asking the client for input with input_required rounds, say) happens in the request.
func StartsTask(support TaskSupport) ToolOption {
	return func(o *toolOptions) { o.tasks, o.wholly = support, false }
}

// TaskFunc is the part of a tool call that runs as a task. req is the task's own: it does not
// send progress or log messages (tasks have none), and its questions to the client become
// the task's inputRequests.
type TaskFunc func(ctx context.Context, req *CallToolRequest) (*CallToolResult, error)

// StartTask returns what a tool handler returns to run fn as a task: the client is answered
// with the task's handle (CreateTaskResult) and fn runs on a goroutine of the server's, under
// a context of its own that keeps ctx's values but not its end. When the call cannot be a
// task (its client did not declare the extension, or the tool was registered without
// AsTask or StartsTask), or already is one, fn runs at once, under ctx, and its result is
// returned. Return StartTask's results as they are:
//
//	return req.StartTask(ctx, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) { ... })
func (r *CallToolRequest) StartTask(ctx context.Context, fn TaskFunc) (*CallToolResult, error) {
	if r.runningTask() != nil || r.meta.taskSupport == TaskForbidden || !r.tasksNegotiated() {
		return fn(ctx, r)
	}
	return &CallToolResult{start: fn}, nil
}

// InTask reports whether the call runs as a task, and if so its id.
func (r *CallToolRequest) InTask() (id string, ok bool) {
	t := r.runningTask()
	if t == nil {
		return "", false
	}
	return t.id, true
}

// runningTask returns the task the request runs as, or nil. It is kept with the task's input
// rounds, which every task has, rather than in Request, which every request has.
func (r *Request) runningTask() *taskState {
	in := r.input.Load()
	if in == nil {
		return nil
	}
	return in.task
}

// tasksNegotiated reports whether the request may be answered with a task: a 2026-07-28
// request that declared the extension.
func (r *Request) tasksNegotiated() bool {
	return r.meta.modern && HasExtension(r.meta.clientCaps, ExtensionTasks)
}

// HasExtension reports whether client capabilities caps declare the extension name (its
// member of "extensions" present, and not null or false).
func HasExtension(caps json.RawMessage, name string) bool {
	v := jsonrpc.Field(jsonrpc.Field(caps, "extensions"), name)
	return v != nil && string(v) != "null" && string(v) != "false"
}

// errTasksRequired answers a request that did not declare the tasks extension where the
// server cannot serve it without.
func errTasksRequired(what string) *jsonrpc.Error {
	return &jsonrpc.Error{Code: CodeMissingRequiredClientCapability,
		Message: "Missing required client capability: " + what + " needs the " + ExtensionTasks +
			" extension; declare it under extensions in the request's clientCapabilities",
		Data: map[string]any{"requiredCapabilities": map[string]any{
			"extensions": map[string]any{ExtensionTasks: map[string]any{}}}}}
}

// TaskPrincipal returns who owns the tasks a request makes, and so who alone can see them:
// the principal the transport authenticated (runtime.PrincipalFrom) when there is one; else
// the transport session (an initialize-generation Streamable HTTP session); else nobody in
// particular, "" — a stdio server's one peer, or unauthenticated 2026-07-28 HTTP requests,
// which share their tasks and for which a task's unguessable id is the only key to it.
func TaskPrincipal(ctx context.Context) string {
	if p := runtime.PrincipalFrom(ctx); p != nil {
		return "principal:" + p.ID
	}
	if id, ok := runtime.SessionIDFrom(ctx); ok && id != "" {
		return "session:" + id
	}
	return ""
}

// taskState is what a task's own Request knows of its task.
type taskState struct {
	id        string
	principal string
}

// newTaskID draws a task id: 128 random bits.
func newTaskID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic("mcp: no randomness for a task id: " + err.Error())
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// taskRunner owns the goroutines of the tasks this process runs: each is started here, and
// Close cancels them and waits for them.
type taskRunner struct {
	mu     sync.Mutex
	live   map[string]*taskActor
	closed bool
	stop   chan struct{} // closed by Close; made with the first task (stopping)
	wg     sync.WaitGroup
}

// stopping is closed once Close has begun.
func (t *taskRunner) stopping() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stop == nil {
		t.stop = make(chan struct{})
		if t.closed {
			close(t.stop)
		}
	}
	return t.stop
}

// taskActor is a running task: how to stop it, and how to wake it when its questions have
// all been answered.
type taskActor struct {
	cancel    context.CancelCauseFunc
	wake      chan struct{} // buffered 1
	principal string        // the task's, to read it in the store
}

// errTaskTooLarge is the outcome of a task whose result or questions the store cannot keep.
var errTaskTooLarge = &jsonrpc.Error{Code: CodeServerBusy,
	Message: "Server busy: the task's result is larger than the task store can keep now; call the tool again later, or ask for less"}

// errClosedForTasks answers a call that would make a task once Close has begun.
var errClosedForTasks = &jsonrpc.Error{Code: CodeServerBusy,
	Message: "Server shutting down: it starts no tasks now; retry on another instance, or later",
	Data:    map[string]any{"retryable": true}}

var (
	errTaskCancelled = errors.New("mcp: the task was cancelled with tasks/cancel")
	errServerClosed  = errors.New("mcp: the server closed while the task ran")
	errTaskExpired   = errors.New("mcp: the task ran past its TTL")
)

// Close stops every task still running, marking each failed, and waits for their
// goroutines; then it stops the goroutines of the Server's Bus, giving the changes not yet
// published (the tasks' ends among them) up to 2 seconds to be. Tasks are not started after Close.
// Call it once the transports serving the server have stopped.
func (s *Server) Close() {
	t := &s.tasks
	t.mu.Lock()
	if !t.closed && t.stop != nil {
		close(t.stop)
	}
	t.closed = true
	for _, a := range t.live {
		a.cancel(errServerClosed)
	}
	t.mu.Unlock()
	t.wg.Wait()
	if s.bus != nil {
		s.bus.close()
	}
}

func (s *Server) taskStore() TaskStore { return s.opts.TaskStore }

// createTask makes a task that runs fn for the tools/call req, and returns its
// CreateTaskResult. The task is stored before the result is returned, so that a tasks/get
// sent as soon as the client has it finds it.
func (s *Server) createTask(ctx context.Context, req *Request, tl *tool, fn TaskFunc) (any, error) {
	principal := TaskPrincipal(ctx)
	rec := &TaskRecord{ID: newTaskID(), Principal: principal, Status: TaskWorking,
		TTL: s.opts.TaskTTL, PollInterval: s.opts.TaskPollInterval}
	t := &s.tasks
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return nil, errClosedForTasks
	}
	// The store is called without the lock: a store of another process may take its time.
	if err := s.taskStore().Create(ctx, rec); err != nil {
		if errors.Is(err, ErrTaskLimit) {
			if tl.opts.tasks == TaskOptional { // it can still run in its request
				res, err := fn(ctx, &req.toolCall)
				return s.toolReturned(ctx, req, tl, res, err)
			}
			return nil, &jsonrpc.Error{Code: CodeServerBusy,
				Message: "Server busy: it holds as many tasks as it may; retry once earlier tasks have finished",
				Data:    map[string]any{"retryable": true}}
		}
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: the task could not be stored: " + err.Error()}
	}
	// The task's context keeps the request's values (its principal, its trace) but not its
	// end: the task outlives the request. It ends with tasks/cancel, Close, or the TTL.
	base := context.WithoutCancel(ctx)
	var stopTTL context.CancelFunc = func() {}
	if rec.TTL > 0 {
		// On this process's clock, not the store's: a store may keep time of its own.
		base, stopTTL = context.WithTimeoutCause(base, rec.TTL, errTaskExpired)
	}
	tctx, cancel := context.WithCancelCause(base)
	a := &taskActor{cancel: cancel, wake: make(chan struct{}, 1), principal: principal}
	t.mu.Lock()
	if t.closed { // Close came while the task was stored
		t.mu.Unlock()
		cancel(nil)
		stopTTL()
		s.settleTask(ctx, &taskState{id: rec.ID, principal: principal}, nil, errServerClosed)
		return nil, errClosedForTasks
	}
	if t.live == nil {
		t.live = map[string]*taskActor{}
	}
	t.live[rec.ID] = a
	treq := s.taskRequest(req, rec)
	t.wg.Go(func() {
		defer func() {
			t.mu.Lock()
			delete(t.live, rec.ID)
			t.mu.Unlock()
			cancel(nil)
			stopTTL()
		}()
		defer s.recoverTask(treq.runningTask()) // fn's own panics are caught nearer; this is for the rest
		s.runTask(tctx, a, treq, tl, fn)
	})
	t.mu.Unlock()
	// The client's tasks/update and tasks/cancel may reach another instance of the fleet,
	// which tells this one through the bus (taskChangedElsewhere): heard from the handle on.
	s.awaitBus(ctx)
	return createTaskResult{ResultType: "task", taskView: viewOf(rec)}, nil
}

// taskChangedElsewhere follows, on the instance that runs the task id, what another instance
// of the fleet did to it, told through the Bus: a tasks/update that answered the task's last
// question (it works again) wakes it, and a tasks/cancel stops it, as each does when it
// reaches the instance that runs the task. It reads the shared store to know which.
func (s *Server) taskChangedElsewhere(id string) {
	s.tasks.mu.Lock()
	a := s.tasks.live[id]
	s.tasks.mu.Unlock()
	if a == nil { // not run here
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), busPublish)
	defer cancel()
	rec, err := s.taskStore().Get(ctx, a.principal, id)
	if err != nil {
		return
	}
	switch rec.Status {
	case TaskCancelled:
		a.cancel(errTaskCancelled)
	case TaskWorking:
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
}

// taskRequest returns the Request a task runs with: the tools/call's, with its own copy of
// what it keeps, and nothing that ties it to the request (no progress, no log messages).
func (s *Server) taskRequest(req *Request, rec *TaskRecord) *Request {
	rt := &runtime.Request{ID: bytes.Clone(req.rt.ID), Method: req.rt.Method, Params: bytes.Clone(req.rt.Params)}
	treq := &Request{rt: rt, s: s, meta: req.meta}
	treq.meta.progress, treq.meta.logLevel = false, -1
	treq.input.Store(&inputRounds{task: &taskState{id: rec.ID, principal: rec.Principal}})
	treq.toolCall = CallToolRequest{Request: treq, Name: req.toolCall.Name, Arguments: bytes.Clone(req.toolCall.Arguments)}
	return treq
}

// runTask is a task's goroutine: it runs fn, and again each time the client has answered all
// it asked, until fn returns something else than ErrInputRequired; then it records the
// outcome. No panic escapes it: one is the task's failure.
func (s *Server) runTask(ctx context.Context, a *taskActor, treq *Request, tl *tool, fn TaskFunc) {
	task := treq.runningTask()
	store := s.taskStore()
	answers := map[string]json.RawMessage{}
	for {
		in := &inputRounds{answers: answers, task: task}
		treq.input.Store(in)
		res, err := callTask(ctx, &treq.toolCall, fn)
		if questions := in.questions(); err != nil && errors.Is(err, ErrInputRequired) && len(questions) > 0 && ctx.Err() == nil {
			asked := map[string]json.RawMessage{}
			for k, q := range questions {
				raw, _ := json.Marshal(q)
				asked[k] = raw
			}
			_, err := store.Update(ctx, task.principal, task.id, func(t *TaskRecord) bool {
				if t.Status.Terminal() {
					return false
				}
				t.Status, t.InputRequests = TaskInputRequired, asked
				return true
			})
			if err != nil { // expired meanwhile, or the questions do not fit
				if errors.Is(err, ErrTaskLimit) {
					s.settleTask(ctx, task, nil, errTaskTooLarge)
				}
				return
			}
			s.taskChanged(task.id)
			select {
			case <-a.wake:
			case <-ctx.Done():
				s.settleTask(ctx, task, nil, context.Cause(ctx))
				return
			}
			rec, err := store.Get(ctx, task.principal, task.id)
			if err != nil || rec.Status.Terminal() {
				return
			}
			answers = rec.Answers
			continue
		}
		if ctx.Err() == nil {
			r, rerr := s.toolReturned(ctx, treq, tl, res, err)
			s.settleTask(ctx, task, r, rerr)
			return
		}
		s.settleTask(ctx, task, nil, context.Cause(ctx))
		return
	}
}

// recoverTask ends a task whose goroutine panicked outside the tool (in the output check, an
// encoder, the store): the task fails, and no panic escapes.
func (s *Server) recoverTask(task *taskState) {
	v := recover()
	if v == nil {
		return
	}
	defer func() { recover() }() // a store that panics again loses the outcome, not the process
	s.settleTask(context.Background(), task, nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
		Message: fmt.Sprintf("Internal error: the task panicked: %v", v)})
}

// callTask calls fn, turning a panic into an error.
func callTask(ctx context.Context, req *CallToolRequest, fn TaskFunc) (res *CallToolResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: fmt.Sprintf("Internal error: tool %s panicked: %v", req.Name, v)}
		}
	}()
	return fn(ctx, req)
}

// settleTask records how a task ended: a result (completed), or an error (failed, or
// cancelled when tasks/cancel ended it). A task that is terminal already stays as it is.
func (s *Server) settleTask(ctx context.Context, task *taskState, res any, err error) {
	var raw json.RawMessage
	var rpcErr *jsonrpc.Error
	status := TaskCompleted
	switch {
	case errors.Is(err, errTaskCancelled):
		status = TaskCancelled
	case errors.Is(err, errServerClosed):
		status, rpcErr = TaskFailed, &jsonrpc.Error{Code: CodeServerBusy,
			Message: "Server shut down while the task ran; call the tool again"}
	case errors.Is(err, errTaskExpired):
		status, rpcErr = TaskFailed, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
			Message: "Internal error: the task ran past its TTL and was stopped"}
	case err != nil:
		status = TaskFailed
		if !errors.As(err, &rpcErr) {
			rpcErr = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: " + err.Error()}
		}
	default:
		raw, err = encodeResult(res)
		if err != nil {
			status, rpcErr = TaskFailed, &jsonrpc.Error{Code: jsonrpc.CodeInternalError,
				Message: "Internal error: the tool's result cannot be encoded: " + err.Error()}
		}
	}
	// A context that has ended still reaches the store: the outcome must be written.
	changed := false
	settle := func(t *TaskRecord) bool {
		changed = false
		if t.Status.Terminal() {
			return false
		}
		t.Status, t.InputRequests, t.Answers = status, nil, nil
		t.Result, t.Error = raw, rpcErr
		if rpcErr != nil {
			t.StatusMessage = rpcErr.Message
		}
		changed = true
		return true
	}
	ctx = context.WithoutCancel(ctx)
	// A shared store that cannot be reached now (a fleet's Redis, restarting) gets the
	// outcome when it is back: tried again with backoff until the task would have expired
	// anyway, or the server closes. Without it the task stays working until its TTL.
	b := backoff.NewExponentialBackOff(backoff.WithInitialInterval(50*time.Millisecond),
		backoff.WithMaxInterval(5*time.Second), backoff.WithMaxElapsedTime(s.opts.TaskTTL))
	for {
		_, err := s.taskStore().Update(ctx, task.principal, task.id, settle)
		if errors.Is(err, ErrTaskLimit) {
			status, raw, rpcErr = TaskFailed, nil, errTaskTooLarge // an outcome that fits
			_, err = s.taskStore().Update(ctx, task.principal, task.id, settle)
		}
		if err != nil {
			changed = false // fn may have run, but nothing was kept
		}
		if err == nil || errors.Is(err, ErrTaskNotFound) || errors.Is(err, ErrTaskLimit) {
			break
		}
		wait := b.NextBackOff()
		if wait == backoff.Stop {
			break
		}
		select {
		case <-time.After(wait):
			continue
		case <-s.tasks.stopping():
		}
		break
	}
	if changed {
		s.taskChanged(task.id)
	}
}

// taskChanged tells the listens that follow a task (notifications/tasks) that it changed.
// Like every server-wide change, it is dropped for a listen too far behind: clients that
// must not miss an end poll tasks/get too.
func (s *Server) taskChanged(id string) { s.changed(change{kind: taskChanged, uri: id}) }

// taskView is a task as the wire shows it (Task, and DetailedTask's members).
type taskView struct {
	TaskID         string                     `json:"taskId"`
	Status         TaskStatus                 `json:"status"`
	StatusMessage  string                     `json:"statusMessage,omitempty"`
	CreatedAt      string                     `json:"createdAt"`
	LastUpdatedAt  string                     `json:"lastUpdatedAt"`
	TTLMs          *int64                     `json:"ttlMs"`
	PollIntervalMs int64                      `json:"pollIntervalMs,omitempty"`
	InputRequests  map[string]json.RawMessage `json:"inputRequests,omitempty"`
	Result         json.RawMessage            `json:"result,omitempty"`
	Error          *jsonrpc.Error             `json:"error,omitempty"`
}

// createTaskResult answers a tools/call with a task: resultType "task" and the task's
// members, flat. resultType comes first (see encodeResult).
type createTaskResult struct {
	ResultType string `json:"resultType"`
	taskView
}

// viewOf shows a task record on the wire.
func viewOf(rec *TaskRecord) taskView {
	v := taskView{TaskID: rec.ID, Status: rec.Status, StatusMessage: rec.StatusMessage,
		CreatedAt:      rec.CreatedAt.UTC().Format(time.RFC3339Nano),
		LastUpdatedAt:  rec.UpdatedAt.UTC().Format(time.RFC3339Nano),
		PollIntervalMs: rec.PollInterval.Milliseconds()}
	if rec.TTL > 0 {
		ms := rec.TTL.Milliseconds()
		v.TTLMs = &ms
	}
	return v
}

// detailedView is tasks/get's view: the task with what its status carries.
func detailedView(rec *TaskRecord) taskView {
	v := viewOf(rec)
	switch rec.Status {
	case TaskInputRequired:
		v.InputRequests = rec.InputRequests
	case TaskCompleted:
		v.Result = rec.Result
	case TaskFailed:
		v.Error = rec.Error
	}
	return v
}

// routeTask routes tasks/get, tasks/update and tasks/cancel of a 2026-07-28 request.
// routeTaskHandler routes a tasks/* request to ServerOptions.TaskHandler: its result gets
// the 2026-07-28 result fields, as a feature method's does.
func (ss *session) routeTaskHandler(h MethodHandler, req *runtime.Request, rm requestMeta) runtime.Route {
	if !HasExtension(rm.clientCaps, ExtensionTasks) {
		return runtime.Route{Err: errTasksRequired(req.Method)}
	}
	s := ss.s
	return runtime.Route{Handler: func(ctx context.Context, rt *runtime.Request) (any, error) {
		res, err := h(ctx, &Request{rt: rt, s: s, meta: rm})
		if err != nil {
			return nil, err
		}
		raw, err := encodeResult(res)
		if err != nil {
			return nil, err
		}
		return s.modernResult(raw), nil
	}}
}

func (ss *session) routeTask(req *runtime.Request, rm requestMeta) runtime.Route {
	if !HasExtension(rm.clientCaps, ExtensionTasks) {
		return runtime.Route{Err: errTasksRequired(req.Method)}
	}
	id, err := stringParam(req.Params, "taskId")
	if err != nil {
		return runtime.Route{Err: err}
	}
	s := ss.s
	switch req.Method {
	case "tasks/get":
		return runtime.Route{Handler: func(ctx context.Context, rt *runtime.Request) (any, error) {
			rec, err := s.taskStore().Get(ctx, TaskPrincipal(ctx), id)
			if err != nil {
				return nil, taskError(id, err)
			}
			raw, _ := json.Marshal(struct {
				ResultType string `json:"resultType"`
				taskView
			}{"complete", detailedView(rec)})
			return s.modernResult(raw), nil
		}}
	case "tasks/update":
		responses := jsonrpc.Field(req.Params, "inputResponses")
		var answers map[string]json.RawMessage
		if responses == nil || !jsonrpc.IsObject(responses) || json.Unmarshal(responses, &answers) != nil {
			return runtime.Route{Err: errInvalidParams("inputResponses must be an object of answers, by the keys of the task's inputRequests")}
		}
		return runtime.Route{Handler: func(ctx context.Context, rt *runtime.Request) (any, error) {
			if err := s.updateTask(ctx, TaskPrincipal(ctx), id, answers); err != nil {
				return nil, taskError(id, err)
			}
			return s.modernResult([]byte("{}")), nil
		}}
	default: // tasks/cancel
		return runtime.Route{Handler: func(ctx context.Context, rt *runtime.Request) (any, error) {
			if err := s.cancelTask(ctx, TaskPrincipal(ctx), id); err != nil {
				return nil, taskError(id, err)
			}
			return s.modernResult([]byte("{}")), nil
		}}
	}
}

// taskError answers a tasks/* request whose task the store could not give.
func taskError(id string, err error) error {
	if errors.Is(err, ErrTaskNotFound) {
		return errInvalidParams("no task %q for this caller: it never existed, has expired, or was made by another; call the tool again", id)
	}
	if errors.Is(err, ErrTaskLimit) {
		return &jsonrpc.Error{Code: CodeServerBusy, Message: "Server busy: the task store cannot keep these answers now; retry later, or answer with less",
			Data: map[string]any{"retryable": true}}
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "Internal error: the task store failed: " + err.Error()}
}

// updateTask takes the client's answers to a task's questions: those to questions still
// outstanding are kept, others ignored (the spec's rule); once none is outstanding, the task
// works again and its goroutine is woken to run the tool with them.
func (s *Server) updateTask(ctx context.Context, principal, id string, answers map[string]json.RawMessage) error {
	touched, resumed := false, false
	_, err := s.taskStore().Update(ctx, principal, id, func(t *TaskRecord) bool {
		touched, resumed = false, false // fn may run again if the store retries
		if t.Status != TaskInputRequired {
			return false
		}
		changed := false
		for k, v := range answers {
			if _, asked := t.InputRequests[k]; asked {
				if t.Answers == nil {
					t.Answers = map[string]json.RawMessage{}
				}
				t.Answers[k] = v
				delete(t.InputRequests, k)
				changed = true
			}
		}
		if changed && len(t.InputRequests) == 0 {
			t.Status, t.InputRequests, resumed = TaskWorking, nil, true
		}
		touched = changed
		return changed
	})
	if err != nil {
		return err
	}
	if touched {
		s.taskChanged(id)
	}
	if resumed {
		s.tasks.mu.Lock()
		a := s.tasks.live[id]
		s.tasks.mu.Unlock()
		if a != nil {
			select {
			case a.wake <- struct{}{}:
			default:
			}
		}
	}
	return nil
}

// cancelTask marks a task cancelled, unless it has ended, and stops its goroutine. Cancelling
// an ended task is not an error: the answer is the same empty acknowledgement.
func (s *Server) cancelTask(ctx context.Context, principal, id string) error {
	changed := false
	_, err := s.taskStore().Update(ctx, principal, id, func(t *TaskRecord) bool {
		changed = !t.Status.Terminal() // fn may run again (a shared store retries it): its last run decides
		if !changed {
			return false
		}
		t.Status, t.InputRequests, t.StatusMessage = TaskCancelled, nil, "Cancelled by the client (tasks/cancel)"
		return true
	})
	if err != nil {
		return err
	}
	if changed {
		s.taskChanged(id)
		s.tasks.mu.Lock()
		a := s.tasks.live[id]
		s.tasks.mu.Unlock()
		if a != nil {
			a.cancel(errTaskCancelled)
		}
	}
	return nil
}
