// Command limit is the floor the machine sets for BenchmarkEcho: a stdio "server" that reads
// lines on one goroutine and answers each echo call by copying the text into a canned answer,
// with no JSON-RPC validation, no dispatch and no concurrency. It is not an MCP server; it is
// the column the benchmark table calls the limit, what the driver, the pipes and the kernel
// allow.
//
// It answers server/discover with a fixed result, ignores lines without an id
// (notifications), and answers tools/call with the raw "text" member of the request (the
// first one in the line) as one text content item. Everything else gets a canned error.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
)

const discover = `{"resultType":"complete","supportedVersions":["2026-07-28"],` +
	`"capabilities":{"tools":{}},"serverInfo":{"name":"limit","version":"1.0.0"}}`

func main() {
	br := bufio.NewReaderSize(os.Stdin, 1<<20)
	bw := bufio.NewWriterSize(os.Stdout, 1<<20)
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
			answer(bw, line)
		}
		if err != nil {
			bw.Flush()
			if errors.Is(err, io.EOF) {
				return
			}
			os.Exit(1)
		}
		if br.Buffered() == 0 { // nothing more queued: send what this read produced
			if bw.Flush() != nil {
				os.Exit(1)
			}
		}
	}
}

// answer writes the answer to one request line, if it is a request.
func answer(w *bufio.Writer, line []byte) {
	id := member(line, `"id":`)
	if id == nil {
		return
	}
	w.WriteString(`{"jsonrpc":"2.0","id":`)
	w.Write(id)
	switch {
	case bytes.Contains(line, []byte(`"method":"tools/call"`)):
		w.WriteString(`,"result":{"content":[{"type":"text","text":`)
		w.Write(member(line, `"text":`))
		w.WriteString("}]}}\n")
	case bytes.Contains(line, []byte(`"method":"server/discover"`)):
		w.WriteString(`,"result":` + discover + "}\n")
	default:
		w.WriteString(`,"error":{"code":-32601,"message":"the limit server answers only tools/call"}}` + "\n")
	}
}

// member returns the raw value after the first occurrence of key: a string with its quotes,
// or the bytes up to the next ',' or '}'.
func member(line []byte, key string) []byte {
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return nil
	}
	v := line[i+len(key):]
	if len(v) > 0 && v[0] == '"' {
		for j := 1; ; {
			k := bytes.IndexByte(v[j:], '"')
			if k < 0 {
				return nil
			}
			q := j + k
			n := 0
			for p := q - 1; p > 0 && v[p] == '\\'; p-- {
				n++
			}
			if n%2 == 0 {
				return v[:q+1]
			}
			j = q + 1
		}
	}
	end := bytes.IndexAny(v, ",}")
	if end < 0 {
		return nil
	}
	return v[:end]
}
