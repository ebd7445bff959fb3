//go:build ignore

// Command gencorpus writes corpus/gostd.json: one document per package of the Go standard
// library, holding the package's synopsis (the first sentence of its doc comment). Packages
// under internal/ or vendor/ and packages without documentation are left out.
//
// Run it with `go generate` in this directory; the output depends on the Go toolchain used.
package main

import (
	"bytes"
	"encoding/json"
	"log"
	"os"
	"os/exec"
	"slices"
	"strings"
)

type document struct {
	ID       string            `json:"id"`
	Text     string            `json:"text"`
	Metadata map[string]string `json:"metadata"`
}

func main() {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}\t{{.Doc}}", "std").Output()
	if err != nil {
		log.Fatalf("go list: %v", err)
	}
	var docs []document
	for line := range strings.Lines(string(out)) {
		path, synopsis, _ := strings.Cut(strings.TrimRight(line, "\n"), "\t")
		synopsis = strings.TrimSpace(synopsis)
		if synopsis == "" || hidden(path) {
			continue
		}
		top, _, _ := strings.Cut(path, "/")
		docs = append(docs, document{ID: path, Text: synopsis,
			Metadata: map[string]string{"package": path, "top": top}})
	}
	slices.SortFunc(docs, func(a, b document) int { return strings.Compare(a.ID, b.ID) })

	// One document per line keeps the file readable and its diffs small.
	var buf bytes.Buffer
	buf.WriteString("[\n")
	for i, d := range docs {
		b, err := json.Marshal(d)
		if err != nil {
			log.Fatal(err)
		}
		buf.Write(b)
		if i < len(docs)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString("]\n")
	if err := os.WriteFile("corpus/gostd.json", buf.Bytes(), 0o644); err != nil {
		log.Fatal(err)
	}
	log.Printf("wrote %d documents to corpus/gostd.json", len(docs))
}

// hidden reports whether path is an internal or vendored package.
func hidden(path string) bool {
	for _, elem := range strings.Split(path, "/") {
		if elem == "internal" || elem == "vendor" {
			return true
		}
	}
	return false
}
