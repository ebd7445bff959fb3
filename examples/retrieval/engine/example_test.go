package engine_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/relayrt/relay/examples/retrieval/engine"
)

// A protocol layer decodes the params with encoding/json, calls the engine and encodes the
// result; *engine.FieldError and *engine.OptionError carry what -32602 and -32005 need.
func Example() {
	e := engine.NewDefault()

	var p engine.RetrieveParams
	if err := json.Unmarshal([]byte(`{"query":"parse JSON","k":2,"mode":"hybrid"}`), &p); err != nil {
		panic(err)
	}
	res, err := e.Retrieve(context.Background(), p, func(fraction float64) {
		fmt.Printf("progress %.2f\n", fraction)
	})
	if err != nil {
		panic(err)
	}
	for _, h := range res.Hits {
		fmt.Println(h.ID, "-", h.Text)
	}

	_, err = e.Retrieve(context.Background(), engine.RetrieveParams{Query: engine.Text("x"), K: -5}, nil)
	fmt.Println(err)
	_, err = e.Retrieve(context.Background(), engine.RetrieveParams{Query: engine.Text("x"), K: 5, Mode: "graph"}, nil)
	fmt.Println(err)

	// The rerank method scores client-supplied passages by late interaction (MaxSim).
	rr, _ := e.Rerank(context.Background(), engine.RerankParams{Query: engine.Text("gzip compression"),
		Passages: []engine.Input{engine.Text("bananas"), engine.Text("gzip compression of streams")}})
	fmt.Println(rr.Order)
	// Output:
	// progress 0.25
	// progress 0.50
	// progress 0.75
	// progress 1.00
	// encoding/json - Package json implements encoding and decoding of JSON as defined in RFC 7159.
	// regexp/syntax - Package syntax parses regular expressions into parse trees and compiles parse trees into programs.
	// invalid params: k: must be an integer ≥ 1, got -5
	// option unsupported: mode "graph"
	// [1 0]
}
