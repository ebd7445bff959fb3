package jsonrpc_test

import (
	"fmt"

	"github.com/relayrt/relay/jsonrpc"
)

// Decode a request and answer it: the id is echoed exactly as it arrived, even when it is an
// integer too large for a float64.
func Example() {
	frame := []byte(`{"jsonrpc":"2.0","id":12345678901234567890,"method":"tools/list","params":{}}`)
	msg, err := jsonrpc.Decode(frame)
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	fmt.Println(msg.Kind, msg.Method, msg.ID)
	fmt.Printf("%s\n", jsonrpc.AppendResult(nil, msg.ID, []byte(`{"tools":[]}`)))

	_, err = jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":null,"method":"ping"}`))
	fmt.Printf("%s\n", jsonrpc.AppendError(nil, jsonrpc.Null, err.(*jsonrpc.DecodeError).AsError()))
	// Output:
	// request tools/list 12345678901234567890
	// {"jsonrpc":"2.0","id":12345678901234567890,"result":{"tools":[]}}
	// {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request: \"id\" must not be null"}}
}
