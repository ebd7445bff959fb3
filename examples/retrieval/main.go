// Command retrieval serves a small, real retrieval engine over RCP/1, the Retrieval Context
// Protocol: BM25, a hashed dense embedding and their RRF fusion over the Go standard
// library's package synopses, a ColBERT-style late-interaction rerank, and a writable index.
// It speaks stdio by default, and RCP over HTTP (POST /rcp/<method>) with -http.
//
//	printf '%s\n' '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,"client":{"name":"me"}}}' \
//	  '{"jsonrpc":"2.0","id":2,"method":"retrieve","params":{"query":"parse JSON","k":3}}' | go run ./examples/retrieval
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/relayrt/relay/examples/retrieval/engine"
	"github.com/relayrt/relay/httpx"
	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/rcp"
	"github.com/relayrt/relay/runtime"
	"github.com/relayrt/relay/stdio"
	"github.com/relayrt/relay/telemetry"
)

func main() {
	addr := flag.String("http", "", "serve RCP over HTTP on this address (e.g. 127.0.0.1:8080, base /rcp) instead of stdio")
	sessions := flag.Bool("sessions", false, "with -http: session mode (initialize returns a token for the RCP-Session header) instead of stateless")
	flag.Parse()

	s := newServer(engine.NewDefault())
	tel, err := telemetry.FromEnv(context.Background(), "relay-retrieval") // OpenTelemetry, when OTEL_* asks for it
	if err != nil {
		fmt.Fprintln(os.Stderr, "retrieval:", err)
		os.Exit(1)
	}
	defer tel.Shutdown(context.Background())
	if *addr != "" {
		ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
		defer stop()
		ops := httpx.NewOps(nil)
		h := httpx.NewRCPHandler(s, &httpx.RCPOptions{Sessions: *sessions, Ops: ops, Runtime: []runtime.Option{tel.Option(telemetry.RCP)}})
		defer h.Close()
		mux := http.NewServeMux()
		mux.Handle("/rcp", h)
		mux.Handle("/rcp/", h)
		mux.Handle("/", ops.Handler()) // /metrics, /healthz, /readyz
		fmt.Fprintf(os.Stderr, "retrieval: serving RCP/1 on http://%s/rcp\n", *addr)
		err = httpx.ListenAndServe(ctx, *addr, mux, &httpx.ServerOptions{Ops: ops, Drain: []io.Closer{h}})
	} else {
		err = stdio.ServeStdio(context.Background(), s.Runtime(tel.Option(telemetry.RCP)))
	}
	if err != nil {
		tel.Shutdown(context.Background())
		fmt.Fprintln(os.Stderr, "retrieval:", err)
		os.Exit(1)
	}
}

// newServer advertises what the engine really implements, and declares conformance level L2
// because the server meets it: retrieve with dense, sparse and hybrid modes, filters,
// streaming progress, logs, pagination, a late-interaction rerank and a writable index; and
// embed, with the engine's dense vectors.
func newServer(e *engine.Engine) *rcp.Server {
	s := rcp.NewServer(rcp.Implementation{Name: "relay-retrieval", Version: "1.0.0"}, &rcp.Options{Conformance: "L2"})
	for name, meta := range e.Capabilities().Map() {
		s.Advertise(name, meta)
	}
	s.Advertise("streaming", nil)
	s.Advertise("log", map[string]any{"levels": []string{"debug", "info", "notice", "warning", "error"}})

	s.Handle("retrieve", func(ctx context.Context, req *rcp.Request) (any, error) {
		var p engine.RetrieveParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		res, err := e.Retrieve(ctx, p, func(f float64) { req.Progress(f, "retrieve", "", nil) })
		if err != nil {
			return nil, rcpError(err)
		}
		req.Log("debug", fmt.Sprintf("retrieved %d hits", len(res.Hits)), nil)
		return res, nil
	})
	s.Handle("embed", func(ctx context.Context, req *rcp.Request) (any, error) {
		var p engine.EmbedParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		res, err := e.Embed(ctx, p)
		return res, rcpError(err)
	})
	s.Handle("rerank", func(ctx context.Context, req *rcp.Request) (any, error) {
		var p engine.RerankParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		res, err := e.Rerank(ctx, p)
		return res, rcpError(err)
	})
	s.Handle("index/add", func(ctx context.Context, req *rcp.Request) (any, error) {
		var p engine.IndexAddParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		res, err := e.IndexAdd(ctx, p)
		return res, rcpError(err)
	})
	s.Handle("index/delete", func(ctx context.Context, req *rcp.Request) (any, error) {
		var p engine.IndexDeleteParams
		if err := decode(req, &p); err != nil {
			return nil, err
		}
		res, err := e.IndexDelete(ctx, p)
		return res, rcpError(err)
	})
	return s
}

// decode decodes params; the engine's types report a malformed field as a *FieldError.
func decode(req *rcp.Request, v any) error {
	params := req.Params()
	if params == nil {
		params = []byte("{}")
	}
	return rcpError(json.Unmarshal(params, v))
}

// rcpError maps the engine's errors to RCP's codes.
func rcpError(err error) error {
	var fe *engine.FieldError
	var oe *engine.OptionError
	var tooLarge *engine.DocumentTooLargeError
	var full *engine.IndexFullError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &fe):
		return rcp.InvalidParams(fe.Field, fe.Field+": "+fe.Reason)
	case errors.As(err, &oe):
		return rcp.OptionUnsupported(oe.Option, oe.Value)
	case errors.As(err, &tooLarge): // §12: split the request
		return &jsonrpc.Error{Code: rcp.CodePayloadTooLarge, Message: "Payload too large: " + err.Error(),
			Data: map[string]any{"field": tooLarge.Field, "retryable": false}}
	case errors.As(err, &full): // §12: it conflicts with what the index holds
		return &jsonrpc.Error{Code: rcp.CodeConflict, Message: "Conflict: " + err.Error(), Data: map[string]any{"retryable": false}}
	case errors.Is(err, engine.ErrIndexVersionUnavailable):
		return rcp.Errorf(rcp.CodeBackendUnavailable, "Backend unavailable: %v", err)
	case errors.Is(err, engine.ErrCursorExpired):
		return rcp.Errorf(rcp.CodeNotFound, "Not found: %v; start the listing again", err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err // the runtime answers -32006 or -32014
	}
	var je *jsonrpc.Error
	if errors.As(err, &je) {
		return je
	}
	return rcp.Errorf(jsonrpc.CodeInternalError, "Internal error: %v", err)
}
