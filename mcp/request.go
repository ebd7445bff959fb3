package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"sync"
	"sync/atomic"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/runtime"
)

// ErrInputRequired is returned by Request.Elicit, CreateMessage and ListRoots under
// 2026-07-28 when the client has not answered yet. A handler returns it (or an error wrapping
// it) as it is: the server then answers with an input_required result, and runs the handler
// again, from the start, when the client retries with the answers. Under the initialize
// generation these calls ask the client directly and never return it.
var ErrInputRequired = errors.New("mcp: input required from the client; return this error from the handler")

// LoggingLevel is the severity of a log message, as in syslog.
type LoggingLevel string

// The levels, least severe first.
const (
	LevelDebug     LoggingLevel = "debug"
	LevelInfo      LoggingLevel = "info"
	LevelNotice    LoggingLevel = "notice"
	LevelWarning   LoggingLevel = "warning"
	LevelError     LoggingLevel = "error"
	LevelCritical  LoggingLevel = "critical"
	LevelAlert     LoggingLevel = "alert"
	LevelEmergency LoggingLevel = "emergency"
)

var levelRank = map[LoggingLevel]int{
	LevelDebug: 0, LevelInfo: 1, LevelNotice: 2, LevelWarning: 3,
	LevelError: 4, LevelCritical: 5, LevelAlert: 6, LevelEmergency: 7,
}

// levels are the levels by rank.
var levels = [...]LoggingLevel{LevelDebug, LevelInfo, LevelNotice, LevelWarning,
	LevelError, LevelCritical, LevelAlert, LevelEmergency}

// requestMeta is what the server knows of a request beyond its params: its era, the version
// and capabilities it runs under, and what it opted into.
type requestMeta struct {
	clientCaps   json.RawMessage
	peer         *runtime.Peer // the legacy session's client, told later of completed URL elicitations
	logLevel     int8          // index into levelRank; -1 sends no log messages
	modern       bool
	retrying     bool // the request carried inputResponses or requestState
	sentProgress bool // in the padding after the others: a Request stays in 144 bytes
	// progress: _meta has a progressToken (a string or an integer), which ProgressToken reads
	// again from the params: a request that waits keeps a bool instead of a slice's 24 bytes.
	progress    bool
	taskSupport TaskSupport     // the tool's, for StartTask; in the padding too
	version     protocolVersion // in the padding too, where a string took 16 bytes of its own
}

// protocolVersion is the revision a request runs under, as its Request keeps it: an index
// into versionNames. The revisions come from ModernVersions and LegacyVersions, so that the
// table holds a handful; those the package names are in it from the start.
type protocolVersion uint8

var (
	versionNames atomic.Pointer[[]string] // grown by copying, under versionsMu
	versionsMu   sync.Mutex
)

func init() {
	names := []string{"", Version20260728, Version20251125, Version20250618, Version20250326}
	versionNames.Store(&names)
}

// internVersion returns v's protocolVersion, adding v to the table if it is not there.
func internVersion(v string) protocolVersion {
	if i, ok := findVersion(*versionNames.Load(), v); ok {
		return i
	}
	versionsMu.Lock()
	defer versionsMu.Unlock()
	names := *versionNames.Load()
	if i, ok := findVersion(names, v); ok {
		return i
	}
	if len(names) > math.MaxUint8 {
		panic("mcp: more than 255 protocol versions")
	}
	grown := append(names[:len(names):len(names)], v)
	versionNames.Store(&grown)
	return protocolVersion(len(grown) - 1)
}

func findVersion(names []string, v string) (protocolVersion, bool) {
	for i, n := range names {
		if n == v {
			return protocolVersion(i), true
		}
	}
	return 0, false
}

// String returns the revision's name.
func (v protocolVersion) String() string { return (*versionNames.Load())[v] }

// Request is what every handler gets besides its own arguments: the protocol version and
// client capabilities it runs under, and the ways to talk to the client while it runs. A
// Request belongs to one handler invocation and is not safe for concurrent use.
//
// A tool call that waits keeps its Request for as long as it waits, so it holds only what the
// handler may still need (144 bytes); what only routing and argument decoding need is in the
// handler's routing, given back before the tool is called (see routing.run).
type Request struct {
	rt     *runtime.Request
	s      *Server
	meta   requestMeta
	params *paramValues // in the routing; nil once a tool runs on its own goroutine

	lastProgress float64

	// 2026-07-28 only, made when answers come in or the handler asks (from any of its
	// goroutines: a handler may ask several questions at once)
	input atomic.Pointer[inputRounds]

	// Storage for what a request makes exactly once, to save it an allocation of its own.
	toolCall CallToolRequest
	text     *CallToolResult // a textOnly result, which (*textAnswer)(r) encodes
}

// inputRounds is what a 2026-07-28 request that asks the client for input carries.
type inputRounds struct {
	mu      sync.Mutex                 // guards asked, n and named while the handler runs
	answers map[string]json.RawMessage // the client's answers so far
	asked   map[string]inputRequest    // what this run needs
	n       int                        // questions asked so far in this run
	named   map[string]bool            // the keys of this run's questions, answered or not
	task    *taskState                 // the task the call runs as, if it does
}

// questions returns what the handler asked in this run: a copy, read under the lock, since a
// goroutine of the handler's may still be asking.
func (in *inputRounds) questions() map[string]inputRequest {
	in.mu.Lock()
	defer in.mu.Unlock()
	return maps.Clone(in.asked)
}

// rounds returns r.input, made if need be.
func (r *Request) rounds() *inputRounds {
	if in := r.input.Load(); in != nil {
		return in
	}
	r.input.CompareAndSwap(nil, &inputRounds{})
	return r.input.Load()
}

// Method returns the JSON-RPC method being served.
func (r *Request) Method() string { return r.rt.Method }

// ID returns the request's JSON-RPC id, exactly as the client sent it.
func (r *Request) ID() jsonrpc.ID { return r.rt.ID }

// Params returns the request's raw params.
func (r *Request) Params() json.RawMessage { return r.rt.Params }

// ProtocolVersion returns the revision the request runs under.
func (r *Request) ProtocolVersion() string { return r.meta.version.String() }

// Stateless reports whether the request is of the stateless 2026-07-28 revision.
func (r *Request) Stateless() bool { return r.meta.modern }

// ClientCapabilities returns the capabilities the client declared: on this request under
// 2026-07-28, in initialize before that.
func (r *Request) ClientCapabilities() json.RawMessage { return r.meta.clientCaps }

// ProgressToken returns the progressToken the client sent in _meta (a JSON string or
// integer), or nil when it asked for no progress: a handler that reports progress on a timer
// need not make the timer for a request that returns nil.
func (r *Request) ProgressToken() json.RawMessage {
	if !r.meta.progress {
		return nil
	}
	return progressToken(readParams(r.rt.Params)[pMeta])
}

// Progress reports progress if the request asked for it with a progressToken; otherwise it
// does nothing. progress must increase from call to call (calls that do not are dropped, as
// the protocol requires); total and message may be zero.
func (r *Request) Progress(progress, total float64, message string) error {
	if !r.meta.progress || (r.meta.sentProgress && progress <= r.lastProgress) {
		return nil
	}
	r.meta.sentProgress, r.lastProgress = true, progress
	return r.rt.Notify("notifications/progress", progressParams{
		Token: r.ProgressToken(), Progress: progress, Total: total, Message: message,
	})
}

type progressParams struct {
	Token    json.RawMessage `json:"progressToken"`
	Progress float64         `json:"progress"`
	Total    float64         `json:"total,omitempty"`
	Message  string          `json:"message,omitempty"`
}

// LogLevel returns the lowest level of the log messages the client asked for with this
// request (its session's logging/setLevel, or the request's _meta logLevel under
// 2026-07-28), or "" when it asked for none: those are what Log sends. A proxy passes it
// on, so that its server sends no more than the client wants.
func (r *Request) LogLevel() LoggingLevel {
	if r.meta.logLevel < 0 || int(r.meta.logLevel) >= len(levels) {
		return ""
	}
	return levels[r.meta.logLevel]
}

// Log sends a log message tied to this request, if the client asked for messages at this
// level or above (with _meta logLevel under 2026-07-28, logging/setLevel before); otherwise
// it does nothing.
func (r *Request) Log(level LoggingLevel, logger string, data any) error {
	rank, ok := levelRank[level]
	if !ok {
		return fmt.Errorf("mcp: unknown logging level %q", level)
	}
	if r.meta.logLevel < 0 || rank < int(r.meta.logLevel) {
		return nil
	}
	return r.rt.Notify("notifications/message", struct {
		Level  LoggingLevel `json:"level"`
		Logger string       `json:"logger,omitempty"`
		Data   any          `json:"data"`
	}{level, logger, data})
}

// inputRequest is one question for the client in an input_required result.
type inputRequest struct {
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// ElicitParams asks the user for structured input (form mode) or to visit a URL.
type ElicitParams struct {
	Mode            string         `json:"mode,omitempty"`
	Message         string         `json:"message"`
	RequestedSchema any            `json:"requestedSchema,omitempty"`
	URL             string         `json:"url,omitempty"`
	ElicitationID   string         `json:"elicitationId,omitempty"`
	Meta            map[string]any `json:"_meta,omitempty"`
}

// ElicitResult is the user's answer: Action is "accept", "decline" or "cancel".
type ElicitResult struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content,omitempty"`
}

// SamplingMessage is one message of a sampling conversation. Content is one block or an array
// of them; NewSamplingMessage builds it from SamplingContent, DecodeSamplingContent reads it.
type SamplingMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// CreateMessageParams asks the client's model for a completion.
type CreateMessageParams struct {
	Messages         []SamplingMessage `json:"messages"`
	SystemPrompt     string            `json:"systemPrompt,omitempty"`
	MaxTokens        int               `json:"maxTokens"`
	ModelPreferences any               `json:"modelPreferences,omitempty"`
	IncludeContext   string            `json:"includeContext,omitempty"`
	Temperature      *float64          `json:"temperature,omitempty"`
	StopSequences    []string          `json:"stopSequences,omitempty"`
	Metadata         any               `json:"metadata,omitempty"`
	// Tools are tools the model may use while it answers (2025-11-25 on): an answer whose
	// StopReason is "toolUse" holds *ToolUseContent blocks, and the server runs the tools and
	// asks again with the conversation so far and a user message of *ToolResultContent. The
	// client must have declared sampling.tools; CreateMessage checks that, and that every
	// tool use in Messages is answered by the next message's tool results and only by them.
	Tools      []*Tool     `json:"tools,omitempty"`
	ToolChoice *ToolChoice `json:"toolChoice,omitempty"` // how the model may use Tools; nil means auto
}

// ToolChoice says how the model may use the tools of a sampling request.
type ToolChoice struct {
	// Mode is ToolChoiceAuto (the model decides, the default), ToolChoiceRequired (it must
	// use at least one tool) or ToolChoiceNone (it must not use any).
	Mode string `json:"mode,omitempty"`
}

// The modes of a ToolChoice.
const (
	ToolChoiceAuto     = "auto"
	ToolChoiceRequired = "required"
	ToolChoiceNone     = "none"
)

// CreateMessageResult is the model's answer. Content is one block or an array of them: read it
// with Blocks. StopReason "toolUse" means the model asks for the tools named by its
// *ToolUseContent blocks.
type CreateMessageResult struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Model      string          `json:"model"`
	StopReason string          `json:"stopReason,omitempty"`
}

// Blocks decodes Content: *TextContent, *ImageContent, *AudioContent, *ToolUseContent or
// *ToolResultContent.
func (r *CreateMessageResult) Blocks() ([]SamplingContent, error) {
	return DecodeSamplingContent(r.Content)
}

// Root is a directory or file the client exposes.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// ListRootsResult lists the client's roots.
type ListRootsResult struct {
	Roots []Root `json:"roots"`
}

// An AskOption tunes one question a handler asks its client (Elicit, CreateMessage,
// ListRoots).
type AskOption func(*askOptions)

type askOptions struct{ key string }

// InputKey names the question in a 2026-07-28 input_required result: its key in
// inputRequests, under which the client answers in inputResponses (MCP 2026-07-28, Basic ›
// Patterns › Multi-round-trip requests). The handler runs again with the answers, so the key
// must name the same question on every run, and no two questions of one request. Without it,
// questions are named by their kind and order: elicitation-0, sampling-1, roots-2; a handler
// that asks several at once, from goroutines of its own, names each, since their order may
// differ from run to run. Under the initialize generation the question is a request to the
// client, and the key is not used.
func InputKey(key string) AskOption { return func(o *askOptions) { o.key = key } }

// Elicit asks the user, through the client, for input: with a form (p.Mode empty or
// ElicitForm), or by sending them to p.URL (ElicitURL; 2025-11-25 on). The client must have
// declared the elicitation capability with that mode; a form is also allowed by a capability
// that names no mode. A URL-mode answer of "accept" says only that the user agreed to go:
// under the initialize generation the server calls CompleteElicitation(p.ElicitationID) once
// they are done (Elicit fills in an empty ElicitationID).
func (r *Request) Elicit(ctx context.Context, p *ElicitParams, opts ...AskOption) (*ElicitResult, error) {
	var res ElicitResult
	p, err := r.checkElicit(p)
	if err != nil {
		return nil, err
	}
	if err := r.ask(ctx, "elicitation/create", "elicitation", p, &res, opts); err != nil {
		return nil, err
	}
	return &res, nil
}

// CreateMessage asks the client's model for a completion. The client must have declared the
// sampling capability, and sampling.tools when p offers tools or the conversation holds tool
// uses or results (2025-11-25 Client Features › Sampling › Tool use).
func (r *Request) CreateMessage(ctx context.Context, p *CreateMessageParams, opts ...AskOption) (*CreateMessageResult, error) {
	withTools, err := checkSampling(p)
	if err != nil {
		return nil, err
	}
	if withTools && !hasSubCapability(r.meta.clientCaps, "sampling", "tools") {
		return nil, r.missingCapability("sampling", "tools")
	}
	var res CreateMessageResult
	if err := r.ask(ctx, "sampling/createMessage", "sampling", p, &res, opts); err != nil {
		return nil, err
	}
	return &res, nil
}

// ListRoots asks the client for its roots. The client must have declared the roots
// capability.
func (r *Request) ListRoots(ctx context.Context, opts ...AskOption) (*ListRootsResult, error) {
	var res ListRootsResult
	if err := r.ask(ctx, "roots/list", "roots", struct{}{}, &res, opts); err != nil {
		return nil, err
	}
	return &res, nil
}

// ask is the one way a handler asks the client something, whatever the era.
func (r *Request) ask(ctx context.Context, method, capability string, params, out any, opts []AskOption) error {
	if !hasCapability(r.meta.clientCaps, capability) {
		return r.missingCapability(capability, "")
	}
	if !r.meta.modern {
		ctx, cancel := context.WithTimeout(ctx, r.s.inputTimeout())
		defer cancel()
		raw, err := r.rt.Call(ctx, method, params)
		if err != nil {
			return &ClientError{Method: method, Err: err}
		}
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("mcp: the client's answer to %s is malformed: %w", method, err)
		}
		return nil
	}
	if !mrtrMethods[r.rt.Method] {
		return fmt.Errorf("mcp: %s cannot ask the client for input; only tools/call, prompts/get and resources/read can", r.rt.Method)
	}
	in := r.rounds()
	var o askOptions
	for _, opt := range opts {
		opt(&o)
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	key := o.key
	if key == "" {
		key = fmt.Sprintf("%s-%d", capability, in.n)
	}
	in.n++
	if in.named[key] {
		return fmt.Errorf("mcp: two questions of one request are named %q; give each its own InputKey", key)
	}
	if in.named == nil {
		in.named = map[string]bool{}
	}
	in.named[key] = true
	if ans, ok := in.answers[key]; ok {
		if err := json.Unmarshal(ans, out); err != nil {
			return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
				Message: "Invalid params: inputResponses[" + key + "] is not a valid " + method + " result"}
		}
		return nil
	}
	if in.asked == nil {
		in.asked = map[string]inputRequest{}
	}
	in.asked[key] = inputRequest{Method: method, Params: params}
	return ErrInputRequired
}

// Interactive runs fn as a tool, prompt or resource handler that may ask the client for
// input is run, for code that serves such a request itself (a middleware that passes it on
// to a server of the initialize generation, as a gateway does): under 2026-07-28 the
// answers the request carries (inputResponses, and those sealed in requestState) are what
// Elicit, CreateMessage and ListRoots return, and fn's ErrInputRequired becomes an
// input_required result asking what they asked. target is what the request names (the
// tool's or prompt's name, the resource's URI) and args its arguments: the requestState is
// bound to them. Under the initialize generation it only runs fn.
func (r *Request) Interactive(ctx context.Context, target string, args json.RawMessage, fn func() (any, error)) (any, error) {
	return r.s.interactive(ctx, r, target, args, jsonrpc.Field(r.rt.Params, "requestState"),
		jsonrpc.Field(r.rt.Params, "inputResponses"), fn)
}

// ClientError is what Elicit, CreateMessage and ListRoots return when the client answered
// with an error (a user who refused, say) or did not answer in time. It deliberately does not
// unwrap to the client's *jsonrpc.Error: returned from a tool, it becomes a tool error the
// model can read, not a protocol error that would pass the client's own code off as the
// server's. Use errors.As with a *ClientError to inspect it.
type ClientError struct {
	Method string
	Err    error
}

func (e *ClientError) Error() string {
	return "the client did not answer " + e.Method + ": " + e.Err.Error()
}

// mrtrMethods are the methods that may answer input_required.
var mrtrMethods = map[string]bool{"tools/call": true, "prompts/get": true, "resources/read": true}

func hasCapability(caps json.RawMessage, name string) bool {
	v := jsonrpc.Field(caps, name)
	return v != nil && string(v) != "null" && string(v) != "false"
}

// hasSubCapability reports whether the client declared name.sub (sampling.tools,
// elicitation.url).
func hasSubCapability(caps json.RawMessage, name, sub string) bool {
	return hasCapability(jsonrpc.Field(caps, name), sub)
}

// missingCapability is the error for a question the client did not declare it can answer:
// -32021 naming the capability under 2026-07-28 (Basic › _meta), a plain error before it,
// where that code does not exist. sub, if not empty, is the member of name that is missing.
func (r *Request) missingCapability(name, sub string) error {
	path, need := name, map[string]any{}
	if sub != "" {
		path, need = name+"."+sub, map[string]any{sub: map[string]any{}}
	}
	if !r.meta.modern {
		return fmt.Errorf("mcp: the client did not declare the %s capability in initialize", path)
	}
	return &jsonrpc.Error{
		Code:    CodeMissingRequiredClientCapability,
		Message: "Missing required client capability: this request needs " + path + "; declare it in the client capabilities",
		Data:    map[string]any{"requiredCapabilities": map[string]any{name: need}},
	}
}

// checkSampling checks a sampling request with tools against the rules of 2025-11-25 Client
// Features › Sampling › Tool use: each tool has an input schema, the tool choice is known, a
// message with tool results holds nothing else and is the user's, and every assistant tool
// use is answered, each by its ID, by the next message. withTools reports whether the request
// needs the client's sampling.tools.
func checkSampling(p *CreateMessageParams) (withTools bool, err error) {
	withTools = len(p.Tools) > 0 || p.ToolChoice != nil
	for _, t := range p.Tools {
		if t == nil || t.InputSchema == nil {
			return false, errors.New("mcp: every tool offered for sampling needs a Name and an InputSchema")
		}
	}
	if c := p.ToolChoice; c != nil && c.Mode != "" && c.Mode != ToolChoiceAuto && c.Mode != ToolChoiceRequired && c.Mode != ToolChoiceNone {
		return false, fmt.Errorf("mcp: tool choice mode %q is not auto, required or none", c.Mode)
	}
	var pending map[string]bool // tool uses of the previous message, by ID, not yet answered
	for i, m := range p.Messages {
		blocks, err := DecodeSamplingContent(m.Content)
		if err != nil {
			return false, fmt.Errorf("mcp: sampling message %d: %w", i, err)
		}
		uses, results := map[string]bool{}, 0
		for _, b := range blocks {
			switch b := b.(type) {
			case *ToolUseContent:
				uses[b.ID] = true
			case *ToolResultContent:
				results++
				if !pending[b.ToolUseID] {
					return false, fmt.Errorf("mcp: sampling message %d answers tool use %q, which the message before it did not ask for (or another result answered)", i, b.ToolUseID)
				}
				delete(pending, b.ToolUseID)
			}
		}
		if len(uses) > 0 || results > 0 {
			withTools = true
		}
		if results > 0 && (results != len(blocks) || m.Role != "user") {
			return false, fmt.Errorf("mcp: sampling message %d mixes tool results with other content, or is not the user's; a message of tool results holds nothing else", i)
		}
		if len(pending) > 0 {
			return false, fmt.Errorf("mcp: sampling message %d must answer every tool use of the message before it with a tool result of the same ID", i)
		}
		if len(uses) > 0 && m.Role != "assistant" {
			return false, fmt.Errorf("mcp: sampling message %d holds tool uses but is not the assistant's", i)
		}
		pending = uses
	}
	if len(pending) > 0 {
		return false, errors.New("mcp: the last sampling message asks for tools; answer them with a user message of tool results before asking again")
	}
	return withTools, nil
}
