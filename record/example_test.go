package record_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/relayrt/relay/record"
)

// A recording of one exchange, with the password redacted, read back.
func Example() {
	dir, _ := os.MkdirTemp("", "record")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "session.ndjson")

	redact, _ := record.ParsePointers("/params/arguments/password")
	rec, err := record.Create(path, &record.Options{Redact: redact})
	if err != nil {
		fmt.Println(err)
		return
	}
	rec.Record(record.In, []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"login","arguments":{"password":"hunter2"}}}`))
	rec.Record(record.Out, []byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`))
	rec.Close()

	f, _ := os.Open(path)
	defer f.Close()
	frames, _ := record.ReadFile(f)
	for _, fr := range frames {
		fmt.Println(fr.Dir, string(fr.Msg))
	}
	// Output:
	// in {"id":1,"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{"password":"[redacted]"},"name":"login"}}
	// out {"jsonrpc":"2.0","id":1,"result":{"content":[]}}
}
