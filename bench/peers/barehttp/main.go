// Command barehttp is the limit of the Streamable HTTP benchmark: a plain
// net/http handler that reads each POSTed body and answers it with a constant
// application/json tools/call result, doing no JSON-RPC or MCP work at all.
//
// The answer has id 1 and one text item equal to -text, which is what the
// benchmark's driver sends (every one of its requests has id 1 and the same
// text), so the driver accepts it like any echo server's answer.
//
// Usage:
//
//	barehttp -http 127.0.0.1:8080 [-text hello]
package main

import (
	"encoding/json"
	"flag"
	"io"
	"log"
	"net/http"
	"os"
	"strconv"
	"time"
)

func main() {
	addr := flag.String("http", "127.0.0.1:8080", "serve on this address, endpoint /mcp")
	text := flag.String("text", "hello", "the text of the constant answer")
	flag.Parse()
	log.SetOutput(os.Stderr)
	log.SetPrefix("echo-bare-http: ")

	quoted, err := json.Marshal(*text)
	if err != nil {
		log.Fatal(err)
	}
	answer := []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":` + string(quoted) + `}]}}`)
	length := strconv.Itoa(len(answer))

	mux := http.NewServeMux()
	mux.HandleFunc("POST /mcp", func(w http.ResponseWriter, r *http.Request) {
		// Read the body to its end so that the connection can be reused.
		if _, err := io.Copy(io.Discard, r.Body); err != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{length}
		w.Write(answer)
	})
	srv := &http.Server{Addr: *addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	if err := srv.ListenAndServe(); err != nil {
		log.Fatal(err)
	}
}
