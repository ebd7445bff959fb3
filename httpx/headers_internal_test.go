package httpx

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/relayrt/relay/jsonrpc"
	"github.com/relayrt/relay/mcp"
)

func TestHeaderMatches_DIGEST_A13(t *testing.T) {
	cases := []struct {
		rule, typ, header, value string
		want                     bool
	}{
		{"strings compare as-is", "string", "eu-west", `"eu-west"`, true},
		{"strings differ", "string", "eu-east", `"eu-west"`, false},
		{"the base64 form is decoded first", "string", "=?base64?w6lsw6h2ZQ==?=", `"élève"`, true},
		{"a broken base64 form never matches", "string", "=?base64?***?=", `"x"`, false},
		{"integers compare numerically (42 equals 42.0)", "integer", "42", `42.0`, true},
		{"integers differ", "integer", "41", `42`, false},
		{"booleans are true or false", "boolean", "true", `true`, true},
		{"booleans differ", "boolean", "false", `true`, false},
		{"integers compare exactly, not as float64s", "integer", "9007199254740992", `9007199254740993`, false},
		{"integers are decimal: no sign +", "integer", "+42", `42`, false},
		{"integers are decimal: no hexadecimal", "integer", "0x2Ap0", `42`, false},
		{"integers are decimal: no Inf", "integer", "Inf", `1e999`, false},
		{"a huge exponent is refused, not computed", "integer", "1e999999999", `1e999999999`, false},
		{"beyond float64's range is refused", "integer", "1e400", `1e400`, false},
		{"an exponent's leading zeros are not its size", "integer", "0", `0E0000`, true},
		{"zero is zero whatever its exponent", "integer", "0", `-0.000e99999999999`, true},
		{"an exponent reads with the fraction", "integer", "42", `420e-1`, true},
		{"a long body of zeros is read without a bound on its length", "integer", "1" + strings.Repeat("0", 10),
			"0." + strings.Repeat("0", 80) + "1e91", true},
		{"trailing zeros are a power of ten, not digits", "integer", "4200", `42e2`, true},
		{"negatives keep their sign", "integer", "-42", `42`, false},
		{"a value with a control character is sent base64", "string", "a\tb", `"a\tb"`, false},
		{"the same value base64", "string", "=?base64?YQliCg==?=", `"a\tb\n"`, true},
		{"a value with a space at either end is sent base64", "string", " a", `" a"`, false},
		{"a non-ASCII value is sent base64", "string", "élève", `"élève"`, false},
		{"an empty argument is mirrored as an empty header", "string", "", `""`, true},
		{"only both markers make the base64 form: a prefix alone is a literal", "string", "=?base64?abc", `"=?base64?abc"`, true},
		{"a suffix alone is a literal too", "string", "abc?=", `"abc?="`, true},
		{"the markers are lowercase", "string", "=?BASE64?YWJj?=", `"=?BASE64?YWJj?="`, true},
	}
	for _, tc := range cases {
		if got := headerMatches(tc.typ, tc.header, json.RawMessage(tc.value)); got != tc.want {
			t.Errorf("%s: headerMatches(%s, %q, %s) = %v", tc.rule, tc.typ, tc.header, tc.value, got)
		}
	}
}

// TestMirroredHeaderSentTwice: a mirrored header sent twice is refused (400, -32020), even
// when the first copy matches the body: an intermediary might route on the other one.
func TestMirroredHeaderSentTwice(t *testing.T) {
	h := &MCPHandler{headers: func(string) []mcp.HeaderParam { return nil }}
	msg, err := jsonrpc.Decode([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, twice := range []string{"MCP-Protocol-Version", "Mcp-Method", "Mcp-Name"} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set("MCP-Protocol-Version", "2026-07-28")
		r.Header.Set("Mcp-Method", "tools/call")
		r.Header.Set("Mcp-Name", "echo")
		if e := h.checkMirroredHeaders(r, msg); e != nil {
			t.Fatalf("the headers sent once: refused with %s", e.Message)
		}
		r.Header.Add(twice, "other")
		if e := h.checkMirroredHeaders(r, msg); e == nil || e.Code != mcp.CodeHeaderMismatch {
			t.Errorf("%s sent twice: %v; want -32020", twice, e)
		}
	}
}
